/*
 * The guard's tools (guard-tree.h): memory that grows or dies, paths below the guarded root resolved on
 * descriptors (RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS), sorted directory listings, whole writes.
 */
#define _GNU_SOURCE
#include "guard-tree.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/errors.h"
#include "../common/paths.h"
#include "quarantine.h"

void *grow(void *p, int *cap, int need, size_t size) {
  if (need <= *cap) return p;
  *cap = *cap == 0 ? 64 : *cap * 2;
  if (*cap < need) *cap = need;
  p = realloc(p, (size_t)*cap * size);
  if (p == NULL) die("out of memory");
  return p;
}

char *dup_str(const char *s) {
  char *d = strdup(s);
  if (d == NULL) die("out of memory");
  return d;
}

void full_path(const struct guard *g, const char *rel, char *out) {
  if (snprintf(out, GUARD_PATH_MAX, "%s/%s", g->root, rel) >= GUARD_PATH_MAX) strcpy(out + GUARD_PATH_MAX - 4, "...");
}

int changed_since(const struct stat *st, const struct timespec *t) {
  return st->st_ctim.tv_sec > t->tv_sec || (st->st_ctim.tv_sec == t->tv_sec && st->st_ctim.tv_nsec >= t->tv_nsec);
}

int open_parent(const struct guard *g, const char *rel, const char **base) {
  const char *slash = strrchr(rel, '/');
  *base = slash == NULL ? rel : slash + 1;
  if (slash == NULL) return fcntl(g->rootfd, F_DUPFD_CLOEXEC, 3);
  char dir[GUARD_PATH_MAX];
  snprintf(dir, sizeof dir, "%.*s", (int)(slash - rel), rel);
  int fd = open_path(g->rootfd, dir, RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
  struct stat st;
  if (fd >= 0 && (fstat(fd, &st) < 0 || !S_ISDIR(st.st_mode))) {
    close(fd);
    errno = ENOTDIR;
    return -1;
  }
  return fd;
}

int open_parent_checked(struct guard *g, const char *rel, const char **base, FILE *report) {
  int fd = open_parent(g, rel, base);
  if (fd >= 0 || (errno != ELOOP && errno != ENOTDIR && errno != EXDEV)) return fd;
  int cur = fcntl(g->rootfd, F_DUPFD_CLOEXEC, 3);
  char part[GUARD_PATH_MAX];
  for (const char *p = rel; cur >= 0 && p < *base;) {
    const char *slash = strchr(p, '/');
    snprintf(part, sizeof part, "%.*s", (int)(slash - p), p);
    int next = open_path(cur, part, RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
    struct stat st;
    if (next >= 0 && fstat(next, &st) == 0 && !S_ISDIR(st.st_mode)) {
      close(next);
      next = -1;
      if (changed_since(&st, &g->taken)) {
        char where[GUARD_PATH_MAX], shown[GUARD_PATH_MAX];
        snprintf(where, sizeof where, "%.*s", (int)(slash - rel), rel);
        full_path(g, where, shown);
        set_aside(cur, part, report, shown);
      }
    }
    close(cur);
    cur = next;
    p = slash + 1;
  }
  if (cur >= 0) close(cur);
  errno = ENOENT;
  return -1;
}

static int cmp_names(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

char **list_names(int fd, int *n) {
  *n = -1;
  int d = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  DIR *dir = d >= 0 ? fdopendir(d) : NULL;
  if (dir == NULL) {
    if (d >= 0) close(d);
    return NULL;
  }
  *n = 0;
  char **names = NULL;
  int cap = 0;
  struct dirent *e;
  while ((e = readdir(dir)) != NULL) {
    if (e->d_name[0] == '.' && (e->d_name[1] == '\0' || (e->d_name[1] == '.' && e->d_name[2] == '\0'))) continue;
    names = grow(names, &cap, *n + 1, sizeof *names);
    names[(*n)++] = dup_str(e->d_name);
  }
  closedir(dir);
  if (*n > 1) qsort(names, (size_t)*n, sizeof *names, cmp_names);
  return names;
}

void free_names(char **names, int n) {
  for (int k = 0; k < n; k++) free(names[k]);
  free(names);
}

int join(char *out, const char *dir, const char *name) {
  return snprintf(out, GUARD_PATH_MAX, "%s/%s", dir, name) < GUARD_PATH_MAX ? 0 : -1;
}

int pwrite_all(int fd, const char *buf, size_t len, long long at) {
  while (len > 0) {
    ssize_t w = pwrite(fd, buf, len, at);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    buf += w;
    at += w;
    len -= (size_t)w;
  }
  return 0;
}
