/*
 * Where a directory stands among git directories, decided on descriptors for a directory the journal
 * names: is it a git directory, and does it lie inside a control entry (hooks/, info/, …) of one, at any
 * depth. Cached per directory for one check.
 */
#ifndef ALEPH_AFTER_RUN_GITCTX_H
#define ALEPH_AFTER_RUN_GITCTX_H

#include <sys/stat.h>

#include "check-types.h"

/* A control entry: NAME beneath the git directory FD (kept open), shown as PATH. */
struct gitctl {
  int fd;
  char name[32];
  char *path;
  int done; /* set aside already */
};

/* A directory's standing, cached. */
struct gitdir_info {
  dev_t dev;
  ino_t ino;
  int marks;           /* its git markers (gitdir.h) */
  int fd;              /* an O_PATH descriptor of it, for a git directory (else -1) */
  char *path;          /* its path, for a git directory */
  int root;            /* the root it lies beneath */
  int markers_changed; /* the journal saw a marker of it change */
  int touched;         /* the journal saw an entry of it change */
  int ctl_known;       /* ctl below is decided */
  struct gitctl *ctl;  /* the control entry it lies in, or NULL */
  struct gitdir_info *next;
};

/* The standing of directory FD beneath root ROOT; NULL when a step could not be taken (hostile). */
struct gitdir_info *gitctx_of(struct check *c, int fd, int root);
/* Every git directory looked at, for what follows the entries: call with NULL first. */
struct gitdir_info *gitctx_next(struct gitdir_info *prev);
/* Drops the cache. */
void gitctx_forget(void);

#endif
