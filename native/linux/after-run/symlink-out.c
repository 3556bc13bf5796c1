/*
 * Symlinks leading out (symlink-out.h). The target is resolved component by component on descriptors,
 * from the link's directory (or from / for an absolute target): ".." opened as the kernel resolves it, a
 * directory opened without following anything, a symlink met on the way replaced by its own target (at
 * most 40 of them, the kernel's limit). Where it ends — the directory holding the last component, or the
 * directory it names — is placed with the walk up of where.c. A missing component makes it dangling: where
 * it would be created decides; a write tool would create it there.
 */
#define _GNU_SOURCE
#include "symlink-out.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/report.h"
#include "where.h"

#define SYMLINK_HOPS 40

enum { LEADS_INSIDE, LEADS_OUTSIDE, LEADS_DANGLING, LEADS_UNRESOLVABLE };

/* The components still to resolve, as one string of NUL-separated names consumed from the front. */
struct todo {
  char buf[2 * PATH_MAX + 2];
  size_t at, len;
};

/* Puts TARGET's components in front of what is left; 1 when TARGET is absolute. -1 when too long. */
static int prepend(struct todo *t, const char *target) {
  size_t tl = strlen(target), rest = t->len - t->at;
  if (tl + 1 + rest >= sizeof t->buf) return -1;
  memmove(t->buf + tl + 1, t->buf + t->at, rest);
  memcpy(t->buf, target, tl);
  t->buf[tl] = '\0';
  for (size_t i = 0; i < tl; i++)
    if (t->buf[i] == '/') t->buf[i] = '\0';
  t->at = 0;
  t->len = tl + 1 + rest;
  return target[0] == '/';
}

static int placed(struct check *c, int fd, int missing) {
  int v = where_is(c, fd, NULL);
  if (v == WHERE_UNKNOWN) return LEADS_UNRESOLVABLE;
  if (v == WHERE_OUTSIDE) return missing ? LEADS_DANGLING : LEADS_OUTSIDE;
  return LEADS_INSIDE;
}

/* Resolves T (already holding the link's target) from DIR (consumed); one of LEADS_*. */
static int resolve(struct check *c, struct todo *t, int dir, int absolute) {
  int hops = 0, verdict = LEADS_UNRESOLVABLE;
  if (absolute) {
    close(dir);
    dir = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
  }
  while (dir >= 0) {
    if (t->at >= t->len) { /* the end: DIR itself */
      verdict = placed(c, dir, 0);
      break;
    }
    const char *comp = t->buf + t->at;
    t->at += strlen(comp) + 1;
    int last = t->at >= t->len;
    if (comp[0] == '\0' || strcmp(comp, ".") == 0) continue;
    struct stat st;
    int next = -1;
    if (strcmp(comp, "..") == 0) next = openat(dir, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
    else if (fstatat(dir, comp, &st, AT_SYMLINK_NOFOLLOW) < 0) {
      if (errno == ENOENT) verdict = placed(c, dir, 1);
      break;
    } else if (S_ISLNK(st.st_mode)) {
      char target[PATH_MAX];
      ssize_t n = ++hops > SYMLINK_HOPS ? -1 : readlinkat(dir, comp, target, sizeof target - 1);
      if (n <= 0) break;
      target[n] = '\0';
      int abs = prepend(t, target);
      if (abs < 0) break;
      if (abs) {
        close(dir);
        dir = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
      }
      continue;
    } else if (S_ISDIR(st.st_mode)) {
      next = openat(dir, comp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    } else {
      if (last) verdict = placed(c, dir, 0); /* a file: where its directory is */
      break;
    }
    close(dir);
    dir = next;
  }
  if (dir >= 0) close(dir);
  return verdict;
}

/* Whether the link NAME in DIRFD was reported already in this check (met twice: an entry of the change
 * journal, and again by the walk of a directory made during the run that holds it). */
static int seen_before(int dirfd, const char *name) {
  static unsigned long keys[8192]; /* open addressing; once half full, no more are kept (reported again) */
  static int used;
  struct stat l, d;
  if (fstatat(dirfd, name, &l, AT_SYMLINK_NOFOLLOW) < 0 || fstat(dirfd, &d) < 0) return 0;
  unsigned long key = 14695981039346656037ul;
  unsigned long parts[4] = {(unsigned long)l.st_dev, (unsigned long)l.st_ino, (unsigned long)d.st_ino, 0};
  for (const char *p = name; *p != '\0'; p++) parts[3] = (parts[3] ^ (unsigned char)*p) * 1099511628211ul;
  for (int i = 0; i < 4; i++) key = (key ^ parts[i]) * 1099511628211ul;
  key |= 1; /* never 0, the empty slot */
  for (unsigned long i = key % 8192;; i = (i + 1) % 8192) {
    if (keys[i] == key) return 1;
    if (keys[i] != 0) continue;
    if (used < 4096) keys[i] = key, used++;
    return 0;
  }
}

void report_symlink(struct check *c, int dirfd, const char *name, const char *path) {
  char target[PATH_MAX];
  if (seen_before(dirfd, name)) return;
  ssize_t n = readlinkat(dirfd, name, target, sizeof target - 1);
  if (n < 0) return;
  target[n] = '\0';
  struct todo *t = calloc(1, sizeof *t);
  int dir = openat(dirfd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
  int abs = t == NULL ? -1 : prepend(t, target);
  int verdict = abs < 0 || dir < 0 ? LEADS_UNRESOLVABLE : resolve(c, t, dir, abs);
  if (abs < 0 && dir >= 0) close(dir);
  free(t);
  static const char *const words[] = {"inside", "outside", "dangling", "unresolvable"};
  if (verdict != LEADS_INSIDE) report_pair(c->report, "symlink", path, target, words[verdict]);
}
