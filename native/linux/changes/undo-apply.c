/*
 * Putting a run's paths back (undo-apply.h), in an order that works for any mix: objects a rename moved are
 * parked under a temporary name in their root; what the run created or put in place of an earlier object
 * is removed (directories deepest first); missing directories are made (parents first); parked objects go
 * back to their old paths; files' bytes and symlinks are restored (a pre-run copy linked back where it is
 * the very inode, else copied); then mode, owner and times, directories last.
 */
#define _GNU_SOURCE
#include "undo-apply.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "copy.h"

static int depth(const struct undo_entry *e) {
  int d = 0;
  for (const char *p = e->rel; *p != '\0'; p++) d += *p == '/';
  return d + (e->rel[0] != '\0');
}

static int by_depth(const void *a, const void *b) {
  return depth(*(struct undo_entry *const *)a) - depth(*(struct undo_entry *const *)b);
}

/* The entries sorted by depth, shallowest first. */
static struct undo_entry **sorted(struct undo_run *r) {
  struct undo_entry **s = malloc((size_t)(r->n + 1) * sizeof *s);
  if (s == NULL) return NULL;
  for (int i = 0; i < r->n; i++) s[i] = &r->e[i];
  qsort(s, (size_t)r->n, sizeof *s, by_depth);
  return s;
}

/* Pairs each entry holding another's before-object (a rename) with it, and parks that object. */
static void park_renamed(struct undo_run *r) {
  for (int i = 0; i < r->n; i++) {
    struct undo_entry *q = &r->e[i];
    if (state_same_object(&q->before, &q->now)) continue;
    for (int j = 0; j < r->n && q->now.type != '-'; j++)
      if (j != i && state_same_object(&r->e[j].before, &q->now) && r->e[j].root == q->root &&
          !state_same_object(&r->e[j].before, &r->e[j].now)) { /* not a second link of an object still in place */
        const char *name;
        char tmp[64];
        snprintf(tmp, sizeof tmp, ".aleph-undo-%d-%d", (int)getpid(), j);
        int pfd = undo_parent(r, q, &name);
        if (pfd >= 0 && renameat(pfd, name, r->root_fd[q->root], tmp) == 0) {
          r->e[j].moved = 1;
          q->now.type = '-';
        }
        if (pfd >= 0) close(pfd);
        break;
      }
  }
}

/* Removes what is at E's path now when it is not E's before-object. */
static void remove_now(struct undo_run *r, struct undo_entry *e) {
  if (e->now.type == '-' || state_same_object(&e->before, &e->now)) return;
  const char *name;
  int pfd = undo_parent(r, e, &name);
  if (pfd < 0 || unlinkat(pfd, name, e->now.type == 'd' ? AT_REMOVEDIR : 0) < 0) {
    undo_failed(r, e, strerror(errno));
    e->failed = 1;
  } else e->now.type = '-';
  if (pfd >= 0) close(pfd);
}

/* Puts E's before-object (a file's bytes, a symlink, a directory, a parked object) at its path. */
static void restore_object(struct undo_run *r, struct undo_entry *e) {
  if (e->before.type == '-' || e->before.type == 'o' || e->failed) return;
  const char *name;
  char blob[32], tmp[64];
  snprintf(blob, sizeof blob, "%d", e->blob);
  int pfd = undo_parent(r, e, &name), bad = pfd < 0;
  if (!bad && e->moved) {
    snprintf(tmp, sizeof tmp, ".aleph-undo-%d-%d", (int)getpid(), (int)(e - r->e));
    bad = renameat(r->root_fd[e->root], tmp, pfd, name) < 0;
  } else if (!bad && e->before.type == 'd' && e->now.type == '-') {
    bad = mkdirat(pfd, name, 0700) < 0;
  } else if (!bad && e->before.type == 'l' && e->now.type == '-') {
    bad = symlinkat(e->before.target == NULL ? "" : e->before.target, pfd, name) < 0;
  } else if (!bad && e->before.type == 'f' && e->blob > 0) {
    if (e->now.type == '-' && e->linked && linkat(r->blobs, blob, pfd, name, 0) == 0) return (void)close(pfd);
    int in = openat(r->blobs, blob, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    int flags = O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | (e->now.type == '-' ? O_CREAT | O_EXCL : 0);
    int out = openat(pfd, name, flags, 0600);
    /* A file the run left read-only (its owner may not write it): writable for the copy; its mode from
     * before the run is put back with the rest of its metadata. */
    if (out < 0 && errno == EACCES && e->now.type == 'f' &&
        fchmodat(pfd, name, (e->now.mode | 0200) & 07777, AT_SYMLINK_NOFOLLOW) == 0)
      out = openat(pfd, name, flags, 0600);
    struct stat is, os;
    bad = in < 0 || out < 0 || fstat(in, &is) < 0 || fstat(out, &os) < 0 || !S_ISREG(os.st_mode) ||
          copy_bytes(in, out, is.st_size) < 0;
    if (in >= 0) close(in);
    if (out >= 0) close(out);
  } else if (!bad && e->before.type == 'f' && e->now.type == '-') {
    errno = ENOENT;
    bad = 1; /* no pre-run copy */
  }
  if (bad) {
    undo_failed(r, e, strerror(errno));
    e->failed = 1;
  }
  if (pfd >= 0) close(pfd);
}

/* E's mode, owner and times as before the run. */
static void restore_meta(struct undo_run *r, struct undo_entry *e) {
  if (e->before.type == '-' || e->before.type == 'o' || e->failed) return;
  const char *name;
  int pfd = undo_parent(r, e, &name);
  if (pfd < 0) return;
  int link = e->before.type == 'l';
  if (fchownat(pfd, name, e->before.uid, e->before.gid, AT_SYMLINK_NOFOLLOW) < 0 && errno != EPERM) {
    undo_failed(r, e, strerror(errno));
    e->failed = 1;
  }
  if (!e->failed && !link && fchmodat(pfd, name, e->before.mode, AT_SYMLINK_NOFOLLOW) < 0)
    undo_failed(r, e, strerror(errno));
  struct timespec t[2] = {{.tv_nsec = UTIME_OMIT}, {.tv_sec = e->before.msec, .tv_nsec = e->before.mnsec}};
  utimensat(pfd, name, t, AT_SYMLINK_NOFOLLOW);
  close(pfd);
}

void undo_apply(struct undo_run *r) {
  struct undo_entry **s = sorted(r);
  if (s == NULL) return;
  park_renamed(r);
  for (int i = r->n - 1; i >= 0; i--)
    if (s[i]->now.type != 'd') remove_now(r, s[i]);
  for (int i = r->n - 1; i >= 0; i--)
    if (s[i]->now.type == 'd') remove_now(r, s[i]);
  for (int i = 0; i < r->n; i++) restore_object(r, s[i]);
  for (int i = r->n - 1; i >= 0; i--)
    if (s[i]->before.type != 'd') restore_meta(r, s[i]);
  for (int i = r->n - 1; i >= 0; i--)
    if (s[i]->before.type == 'd') restore_meta(r, s[i]);
  free(s);
}
