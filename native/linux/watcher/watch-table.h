/*
 * The change watcher's table of directories (watch-table.c), shared by its marking (watch-tree.c): each
 * marked directory by its file handle, with its parent's handle and its name, and where it stands; the roots;
 * the directories seen and not yet placed. Not for other callers (watch-tree.h).
 */
#ifndef ALEPH_WATCHER_WATCH_TABLE_H
#define ALEPH_WATCHER_WATCH_TABLE_H

#include <stdint.h>
#include <sys/types.h>

#include "watch-proto.h"

enum { HERE = 0, DELETED = 1, AWAY = 2 }; /* AWAY: moved where no event placed it (out of the tree?) */

struct wdir {
  struct wdir *next;
  int gone; /* HERE, DELETED or AWAY */
  int root;
  uint64_t gone_seq;
  struct whandle h;
  struct whandle parent; /* len 0: the root itself */
  char *name;
};

struct wroot {
  int fd;
  dev_t dev;
  ino_t ino;
  uint64_t mnt_id;
  int state;   /* WATCH_READY, or why not for good (WATCH_TOO_MANY, WATCH_BROKEN) */
  long queued; /* its directories waiting in the queue */
};

/* A directory to mark: entry NAME of the marked directory PARENT (len 0: root ROOT itself). */

extern struct wroot wt_roots[WATCH_MAX_ROOTS];
extern int wt_nroots;

int wt_same(const struct whandle *a, const struct whandle *b);
struct wdir *wt_find(const struct whandle *h);
/* A new entry for handle H (not yet known), placed nowhere; NULL when out of memory. */
struct wdir *wt_add(const struct whandle *h);
/* The handle of directory FD into H; -1 when it has none. */
int wt_handle_of(int fd, struct whandle *h);
uint64_t wt_mount_id(int fd);
/* Directory NAME of marked directory P (or P itself when NAME is NULL), opened O_PATH beneath its root with
 * no symlink on the way (search permission is enough); -1 with errno (ESTALE: it or one above it is
 * deleted; ENOENT: away, not known, or not there). */
int wt_open_below(const struct wdir *p, const char *name);
/* Whether marked directory D is where the table says (opened there, the same handle). */
int wt_where_said(const struct wdir *d);
/* Adds OBJ to the unlocated directories (ADD) or takes it out; whether it was there. */
int wt_unlocate(const struct whandle *obj, int add);
/* Whether directories are unlocated (or more than could be kept were), or away (moved where no event
 * placed them: what is below them cannot be vouched for until everything is marked again). */
int wt_unlocated(void);
/* D is now HERE, DELETED or AWAY (GONE), as of event SEQ. */
void wt_set_gone(struct wdir *d, int gone, uint64_t seq);
/* How many directories are away. */
extern int wt_away;
/* Directory DIR holds (or held) a `.git` that is not a directory: swept by ctime at every run's end. */
void wt_note_gitfile(const struct whandle *dir);
/* The directories noted so (*N of them); whether more were met than could be kept (*LOST). */
const struct whandle *wt_gitfiles(int *n, int *lost);
/* Forgets every directory (and every unlocated one, and the `.git` files). */
void wt_clear(void);
/* Forgets the directories deleted at SEQ or before. */
void wt_prune(uint64_t seq);

#endif
