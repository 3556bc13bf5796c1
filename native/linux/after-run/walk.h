/*
 * The complete walk of a tree, for the checks after the run: depth-first over an explicit stack (no
 * recursion, no depth or count limit), each directory opened beneath its parent without following a
 * symlink and read whole, at most WALK_FDS descriptors open. The caller decides per entry.
 */
#ifndef ALEPH_AFTER_RUN_WALK_H
#define ALEPH_AFTER_RUN_WALK_H

#include <stddef.h>
#include <sys/stat.h>

/* Directory descriptors a walk keeps open at most; deeper, ancestors' are closed and reopened. */
#define WALK_FDS 128

/* A directory on the current path of the walk. */
struct walk_dir {
  int fd; /* -1 while closed (beyond WALK_FDS): use walk_fd() */
  dev_t dev;
  ino_t ino;
  struct stat st;   /* its lstat when entered */
  const char *name; /* its name in its parent (in the parent's listing); the start's is "" */
  char *names;      /* its entries, each a type byte (a DT_ value) then a NUL-terminated name */
  size_t nlen, next, ncap;
  size_t plen;  /* the length of the path up to it */
  long data[4]; /* the caller's, zero when entered */
};

struct walk;

/* What the caller does at each step. */
struct walk_ops {
  /* Directory D was entered and read (its entries are in D->names). May be NULL. */
  void (*enter)(struct walk *w, struct walk_dir *d, void *ctx);
  /* An entry NAME of D: ST its lstat (for a directory the listing names, the fstat of the descriptor the
   * walk opened it with and enters), or NULL when it could not be stat'ed (errno E, never ENOENT: those
   * are gone and skipped). 1 to descend into it (a directory), 0 not. */
  int (*entry)(struct walk *w, struct walk_dir *d, const char *name, const struct stat *st, int e, void *ctx);
  /* The directory NAME of D (entry said descend) could not be opened or read (errno E). */
  void (*unreadable)(struct walk *w, struct walk_dir *d, const char *name, int e, void *ctx);
  /* D is done; P is its parent (NULL for the start). May be NULL. */
  void (*leave)(struct walk *w, struct walk_dir *d, struct walk_dir *p, void *ctx);
};

/* Walks the directory DIRFD (shown as PATH); each data[0..3] of the start directory as given in DATA (may
 * be NULL). 0 when done; -1 when the tree moved during the walk (an ancestor reopened through ".." is not
 * the directory left) or memory ran out: what was visited was decided, the rest not. */
int walk_tree(int dirfd, const char *path, const long *data, const struct walk_ops *ops, void *ctx);
/* D's descriptor, reopened through ".." from the directory below it when it was closed; -1 when that
 * failed (the walk then ends as moved). */
int walk_fd(struct walk *w, struct walk_dir *d);
/* The path of the entry NAME of D (or of D itself when NAME is NULL), for the report: valid until the
 * next call. */
const char *walk_path(struct walk *w, struct walk_dir *d, const char *name);
/* D's parent (NULL for the start). */
struct walk_dir *walk_parent(struct walk *w, struct walk_dir *d);
/* How deep D is (the start: 0). */
int walk_depth(struct walk *w, struct walk_dir *d);
/* The directory at DEPTH on the current path. */
struct walk_dir *walk_at(struct walk *w, int depth);

#endif
