/* Private declarations of the tier 3 guard (guard.c takes the snapshot, guard-check.c checks it). */
#ifndef ALEPH_GUARD_H
#define ALEPH_GUARD_H
#include "../common/common.h"

#define GUARD_MAX_ENTRIES 8192
#define GUARD_MAX_BYTES (8LL * 1024 * 1024)
#define GUARD_MAX_WALK 20000
#define GUARD_MAX_DEPTH 32
#define GUARD_MAX_PATHS 128
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

void *grow(void *p, int *cap, int need, size_t size);
char *dup_str(const char *s);
/* ROOT/REL into OUT (GUARD_PATH_MAX bytes), for the report. */
void full_path(const struct guard *g, const char *rel, char *out);
int changed_since(const struct stat *st, const struct timespec *t);
int open_parent(const struct guard *g, const char *rel, const char **base);
int open_parent_checked(struct guard *g, const char *rel, const char **base, FILE *report);
char **list_names(int fd, int *n);
void free_names(char **names, int n);
int join(char *out, const char *dir, const char *name);
int pwrite_all(int fd, const char *buf, size_t len, long long at);
int add_unit(struct guard *g, char kind, const char *rel);
int add_entry(struct guard *g, const struct gentry *e);
/* Snapshots one of the run's protected paths (guard.c). */
void snap_top(struct guard *g, const char *rel);
/* Each entry's `end` (after the snapshot is taken or read). */
void link_entries(struct guard *g);

#endif
