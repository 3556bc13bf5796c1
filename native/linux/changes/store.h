/*
 * A run's change store (`<stateDir>/changes/<runId>/`): every path of the writable roots the run touched,
 * its state before the first touch (with the content of a file that touch could change: a hard link into
 * `blobs/` when the touch removes or replaces the inode, else a sparse-aware copy, counted in allocated
 * bytes against the budget) and, once the run is over, its state after. Written whole as `states` at the
 * end, for the driver (the change set, run.json) and the undo executor (undo.c).
 */
#ifndef ALEPH_CHANGES_STORE_H
#define ALEPH_CHANGES_STORE_H

/* The store's directory DIR (made by the driver, mode 0700), opened; the budget in allocated bytes for the
 * run's copies, and the largest file copied. Dies when DIR cannot be opened. */
void store_open(const char *dir, long long max_bytes, long long max_file);
/* Whether a store is open (--changes given). */
int store_active(void);
/* Adds a writable root: FD a directory descriptor of it on the host, PATH its path (on the host and inside
 * the sandbox alike). Its index. */
int store_add_root(int fd, const char *path);
/* The number of roots, and root K's path. */
int store_nroots(void);
const char *store_root_path(int k);

/* How a touch may change its path. */
#define TOUCH_CONTENT 1  /* the content may change in place (a write open, truncate) */
#define TOUCH_REPLACE 2  /* the inode at the path goes (unlink, rename onto it) */
#define TOUCH_FOLLOWS 4  /* the call follows a last symlink */
#define TOUCH_LINKS_BACK 8 /* on a symlink on the way (or a last one the call follows): record nothing, say 1 */
#define TOUCH_MOVE_SRC 16  /* a rename's source: a directory's move is followed (moves.h) */
#define TOUCH_MOVE_DST 32  /* a rename's target */

/* The first touch of REL beneath root K saves its before-state; later touches do nothing. 0, or 1 (with
 * TOUCH_LINKS_BACK) when the path goes through a symlink: the caller touches the path it leads to. */
int store_touch(int k, const char *rel, int how);
/* REL beneath root K as it is now, into *S (no symlink followed). */
struct path_state;
void store_look(int k, const char *rel, struct path_state *s);
/* The run's changes cannot be undone (the first reason is kept). */
void store_unundoable(const char *why, const char *path);
/* The run's changes were not recorded at all. */
void store_unrecorded(const char *why);
/* After the run: every touched path's after-state, the blobs nobody needs dropped, `states` written. */
void store_finish(void);

#endif
