/*
 * The change watcher's process: its connections (watch-proto.h), its group's events and its marking, in
 * one poll loop.
 */
#ifndef ALEPH_WATCHER_WATCH_LOOP_H
#define ALEPH_WATCHER_WATCH_LOOP_H

/* Runs the watcher on control socket CTL until the fork server closes it. */
int watch_loop(int ctl);

#endif
