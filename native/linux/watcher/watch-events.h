/*
 * The change watcher's events: read from its group into the log (watch-log.h), and into the marks
 * (watch-tree.h): a directory that appears is marked, one that goes is forgotten; lost events (the queue
 * overflowed) drop every mark and start again.
 */
#ifndef ALEPH_WATCHER_WATCH_EVENTS_H
#define ALEPH_WATCHER_WATCH_EVENTS_H

/* Reads every queued event. */
void watch_drain(void);

#endif
