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

#define WATCH_HANDLE_MAX 128

struct whandle {
  uint64_t fsid;
  unsigned len;                           /* bytes of fh used: sizeof(struct file_handle) + handle_bytes */
  unsigned char fh[8 + WATCH_HANDLE_MAX]; /* struct file_handle */
};

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
/* A directory appeared as entry NAME of directory PARENT (its handle OBJ): marked and listed, or
 * unlocated until placed. */
void watch_appeared(const struct whandle *parent, const char *name, const struct whandle *obj);
/* Directory OBJ is gone. */
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
