/*
 * The check after the run, as its files share it (check.c, check-walk.c, journal-check.c, rules.c,
 * where.c, registry.c, symlink-out.c): the writable roots, what was read-only during the run, the start of
 * the run, and what the check found. Not for its callers (check.h).
 */
#ifndef ALEPH_AFTER_RUN_CHECK_TYPES_H
#define ALEPH_AFTER_RUN_CHECK_TYPES_H

#include <stdio.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>

#define CHECK_MAX_ROOTS 128
#define CHECK_MAX_EXEMPT 512

/* How a root was checked. */
enum { CHECK_NONE = 0, CHECK_JOURNAL = 1, CHECK_WALK = 2 };

/* How a git directory's control entries are checked. */
enum { GIT_NONE = 0, GIT_EACH = 1, GIT_ALL = 2 };

struct registry;
struct where;

struct check_root {
  int fd;           /* the root: O_RDONLY | O_DIRECTORY, opened before any clone */
  const char *path; /* for the report */
  dev_t dev;
  ino_t ino;
  int covered;      /* beneath another root: checked with it */
  int cover;        /* that root's index */
  struct registry *known; /* its known git directories (registry.c), NULL when none is kept */
  struct registry *gitfiles; /* its directories known to hold a `.git` file (registry.c), or NULL */
  int method;       /* CHECK_JOURNAL or CHECK_WALK, as checked */
};

struct check {
  struct timespec start; /* the run's start, on the clock ctimes use */
  FILE *report;
  int state_fd;          /* --state, or -1 */
  struct check_root roots[CHECK_MAX_ROOTS];
  int nroots;
  /* What was mounted read-only for the run (and so could not change through it): (dev, ino) pairs. */
  dev_t exempt_dev[CHECK_MAX_EXEMPT];
  ino_t exempt_ino[CHECK_MAX_EXEMPT];
  int nexempt;
  struct where *where; /* the walk-up cache */
};

/* Whether ST changed during the run: its ctime is not older than the start (a command cannot set a ctime
 * back). */
static inline int changed_in_run(const struct check *c, const struct stat *st) {
  return st->st_ctim.tv_sec > c->start.tv_sec ||
         (st->st_ctim.tv_sec == c->start.tv_sec && st->st_ctim.tv_nsec >= c->start.tv_nsec);
}

/* Whether ST is one of the paths mounted read-only for the run. */
static inline int exempt(const struct check *c, const struct stat *st) {
  for (int i = 0; i < c->nexempt; i++)
    if (c->exempt_ino[i] == st->st_ino && c->exempt_dev[i] == st->st_dev) return 1;
  return 0;
}

#endif
