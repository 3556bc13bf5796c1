/*
 * What the change watcher marks: every directory beneath the roots it was given, each with a fanotify
 * inode mark (an unprivileged user may place those) reporting what happens to it and its entries, and kept
 * open, so a directory named by handle in an event is found without open_by_handle_at (root only).
 * Directories that appear (made, or moved in from somewhere unmarked) are found from the events, marked,
 * then listed (what was made in them before the mark is in the listing); a directory that could not be
 * found where its event said is "unlocated" until a later event places it.
 */
#ifndef ALEPH_WATCHER_WATCH_TREE_H
#define ALEPH_WATCHER_WATCH_TREE_H

#include <stdint.h>
#include <sys/types.h>

#include "watch-proto.h"

/* The fanotify group (made by watch_tree_init); -1 when this host refuses one. */
extern int watch_group;

int watch_tree_init(void);
/* The root ROOTFD (a directory descriptor, taken over): its index, added and queued for marking when new;
 * -1 when the table is full. */
int watch_root(int rootfd);
/* WATCH_READY or why root I cannot be vouched for now. */
int watch_root_state(int i);
/* Marks queued directories for about BUDGET_US microseconds (0: until none is left); whether any is left. */
int watch_scan(long budget_us);
/* Directory OBJ was made or moved (APPEARED: made or moved in), as entries NAMES[i] of directories DIRS[i]
 * (N of them) say: looked for there, then marked and listed when new, placed when known; else looked for
 * again by watch_settle. */
void watch_moved(const struct whandle *dirs, const char *const *names, int n, const struct whandle *obj, int appeared, uint64_t seq);
/* Once every queued event is read: what watch_moved could not find yet is looked for again, then taken
 * for away (known) or unlocated (new). */
void watch_settle(void);
/* Directory OBJ is deleted. */
void watch_gone(const struct whandle *obj, uint64_t seq);
/* An O_PATH descriptor of directory H, or -1 with errno (ESTALE: gone; ENOENT: not known, or not where the
 * events left it). */
int watch_open(const struct whandle *h);
/* Everything lost (events lost): every mark dropped and every root marked again from the start. */
void watch_rebuild(void);
/* Forgets what is gone before SEQ. */
void watch_tree_prune(uint64_t seq);
/* Whether directories are unlocated. */
int watch_unlocated(void);

#endif
