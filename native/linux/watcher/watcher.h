/*
 * The change watcher: a process of the fork server's, as long-lived as it, that keeps fanotify inode marks
 * on every directory of the writable roots its runs name, between runs, so that an unprivileged host's
 * check after a run costs what the run changed instead of a walk of the whole tree (issue 38 §5). A root
 * host keeps a filesystem-wide change journal per run instead (after-run/journal.c). The fork server gives
 * each in-process launcher its own connection (watch-proto.h); the launcher asks what changed beneath its
 * roots since it began, and walks any root the watcher cannot vouch for.
 */
#ifndef ALEPH_WATCHER_WATCHER_H
#define ALEPH_WATCHER_WATCHER_H

/* In the fork server: a new connection to the watcher (started on first use) for one run, or -1 when the
 * watcher cannot run. */
int watcher_connect(void);
/* In the fork server's child: the watcher's control descriptor closed. */
void watcher_close_in_child(void);

#endif
