/*
 * How many tasks PROGRAM runs at once (`--watch-pids N SLACK`): while PROGRAM runs, a thread of the launcher
 * counts every process and thread of PROGRAM and below it (in tier 3, where the launcher is the subreaper
 * of what PROGRAM leaves, of the launcher and below it), walking the host's /proc/PID/task/TID/children,
 * every 50 ms, until the count reaches N once. In tiers 1–2 the processes of the sandbox's PID namespace
 * are also counted every 5 ms (every 1 ms at 3/4 of N) from the procfs bwrap mounted for it, reached from
 * its init's /proc/PID/root without following links and used only when it is that namespace's procfs.
 * Nearer than 3/4 of N, it looks again at once (for a fraction of a second, then every millisecond): a
 * refused fork is often followed at once by the end of what made it. Still a peak shorter than a look can
 * be missed, so the launcher reports the most it saw once that is within SLACK of N. Nothing the command
 * prints is believed; the count costs nothing per fork.
 */
#ifndef ALEPH_LAUNCHER_WATCH_H
#define ALEPH_LAUNCHER_WATCH_H

#include <sys/types.h>

/* Starts watching for N tasks of FROM and below it (N <= 0: nothing to watch). */
void watch_start(pid_t from, long n);
/* Stops the watch; the most tasks it saw at once (N once it reached N; 0 when nothing was watched). */
long watch_stop(void);

#endif
