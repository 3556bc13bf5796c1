/*
 * The guard's tools: memory that grows or dies, paths below the guarded root opened on descriptors,
 * sorted directory listings, whole writes.
 */
#ifndef ALEPH_AFTER_RUN_GUARD_TREE_H
#define ALEPH_AFTER_RUN_GUARD_TREE_H

#include <stddef.h>
#include <stdio.h>
#include <sys/stat.h>
#include <time.h>

#include "guard-types.h"

/* P with room for NEED items of SIZE bytes (*CAP doubled as needed); dies when out of memory. */
void *grow(void *p, int *cap, int need, size_t size);
char *dup_str(const char *s);
/* ROOT/REL into OUT (GUARD_PATH_MAX bytes), for the report. */
void full_path(const struct guard *g, const char *rel, char *out);
/* Whether ST's ctime is not older than T. */
int changed_since(const struct stat *st, const struct timespec *t);
/* The O_PATH descriptor of REL's directory (the root for a top-level REL); *BASE is REL's last part. */
int open_parent(const struct guard *g, const char *rel, const char **base);
/* open_parent after the run: a component on the way that is not a directory any more (a symlink, a file)
 * and changed since the snapshot is renamed aside. -1 when the directory is not there (or was just moved). */
int open_parent_checked(struct guard *g, const char *rel, const char **base, FILE *report);
/* The names in directory FD (without . and ..), sorted; *N their number, -1 when it cannot be read. */
char **list_names(int fd, int *n);
void free_names(char **names, int n);
/* DIR/NAME into OUT (GUARD_PATH_MAX bytes); -1 when too long. */
int join(char *out, const char *dir, const char *name);
/* Writes all LEN bytes of BUF at offset AT of FD; -1 on failure. */
int pwrite_all(int fd, const char *buf, size_t len, long long at);

#endif
