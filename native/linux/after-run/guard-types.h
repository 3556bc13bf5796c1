/*
 * Tier 3's guard in memory: its bounds, and the snapshot of a root's protected paths as units (compared and
 * swapped whole, or containers of git directories) of entries in walk order. Shared by the guard's files
 * (guard.c, guard-tree.c, guard-snapshot.c, guard-manifest.c, guard-check.c), not by their callers.
 */
#ifndef ALEPH_AFTER_RUN_GUARD_TYPES_H
#define ALEPH_AFTER_RUN_GUARD_TYPES_H

#include <time.h>

#define GUARD_MAX_ENTRIES 8192
#define GUARD_MAX_BYTES (8LL * 1024 * 1024)
#define GUARD_MAX_WALK 20000
#define GUARD_MAX_DEPTH 32
#define GUARD_MAX_PATHS 1024
#define GUARD_PATH_MAX 4096

struct gentry {
  char type; /* a kept tree: f file, d directory, l symlink; a container's: g git dir, i directory, o other */
  unsigned mode, uid, gid;
  long long size;
  unsigned long long dev, ino;
  long long cs, cn, ms, mn; /* ctime, mtime */
  long long data;           /* the copy's offset in the snapshot's data file, -1 for none */
  int end;                  /* the index after this entry's subtree */
  char *rel;
};

struct gunit {
  char kind; /* p: compared and swapped whole; c: a container of git directories */
  int present, kept;
  int first, count; /* its entries */
  char *rel;
};

struct guard {
  int rootfd;
  const char *root;
  char key[64];
  int manifestfd, datafd; /* guard-DEV-INO.manifest and .data under --state */
  struct timespec taken;
  const char *paths[GUARD_MAX_PATHS]; /* this run's protected paths */
  int npaths;
  char *tops[GUARD_MAX_PATHS]; /* the ones the snapshot holds (of every run sharing it) */
  int ntops;
  struct gunit *units;
  int nunits, capunits;
  struct gentry *entries;
  int nentries, capentries;
  long long datalen; /* the data file's length: what the copies take */
  char gone[GUARD_PATH_MAX]; /* the last directory reported gone */
};

#endif
