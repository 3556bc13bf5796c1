/*
 * Putting a run's paths back (undo-apply.h), in an order that works for any mix: renames are paired, and
 * the objects they moved parked under a temporary name in their root, deepest first; what the run created
 * or put in place of an earlier object is removed where it is after the run (beneath a parked object: in
 * its temporary place; directories deepest first); then, by the names before the run, parents first:
 * missing directories are made, parked objects go back to their old paths, files' bytes, symlinks and
 * FIFOs are restored (a pre-run copy linked back where it is the very inode, else copied); then mode,
 * owner and times, directories last.
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

static int depth_of(const char *rel) {
  int d = 0;
  for (const char *p = rel; *p != '\0'; p++) d += *p == '/';
  return d + (rel[0] != '\0');
}

static int by_depth(const void *a, const void *b) {
  return depth_of((*(struct undo_entry *const *)a)->rel) - depth_of((*(struct undo_entry *const *)b)->rel);
}

static int by_depth_now(const void *a, const void *b) {
  return depth_of(undo_now_rel(*(struct undo_entry *const *)a)) - depth_of(undo_now_rel(*(struct undo_entry *const *)b));
}

/* The entries sorted by depth, shallowest first: of their names before the run, or with NOW of where they
 * are after it. */
static struct undo_entry **sorted(struct undo_run *r, int now) {
  struct undo_entry **s = malloc((size_t)(r->n + 1) * sizeof *s);
  if (s == NULL) return NULL;
  for (int i = 0; i < r->n; i++) s[i] = &r->e[i];
  qsort(s, (size_t)r->n, sizeof *s, now ? by_depth_now : by_depth);
  return s;
}

/* Pairs each entry holding another's before-object (a rename) with that entry (its `source`). */
static void pair_renamed(struct undo_run *r) {
  for (int i = 0; i < r->n; i++) {
    struct undo_entry *q = &r->e[i];
    if (q->now.type == '-' || state_same_object(&q->before, &q->now)) continue;
    for (int j = 0; j < r->n; j++)
      if (j != i && state_same_object(&r->e[j].before, &q->now) && r->e[j].root == q->root &&
          !state_same_object(&r->e[j].before, &r->e[j].now)) { /* not a second link of an object still in place */
        q->source = j;
        break;
      }
  }
}

/* Parks each paired entry's object (where it is after the run) under a temporary name in its root,
 * deepest first (AT: the entries by the depth of where they are after the run), so an object a rename
 * moved within a directory that itself moved is parked before that directory. */
static void park_renamed(struct undo_run *r, struct undo_entry **at) {
  r->parked = malloc((size_t)(r->n + 1) * sizeof *r->parked);
  for (int i = r->n - 1; i >= 0 && r->parked != NULL; i--) {
    struct undo_entry *q = at[i];
    if (q->source < 0 || q->failed) continue;
    const char *name;
    char tmp[48];
    snprintf(tmp, sizeof tmp, ".aleph-undo-%d-%d", (int)getpid(), q->source);
    int pfd = undo_parent_now(r, q, &name);
    if (pfd >= 0 && renameat(pfd, name, r->root_fd[q->root], tmp) == 0) {
      r->e[q->source].moved = 1;
      q->now.type = '-';
      snprintf(q->parked, sizeof q->parked, "%s", tmp);
      r->parked[r->nparked++] = q;
    } else {
      undo_failed(r, q, strerror(errno));
      q->failed = 1;
    }
    if (pfd >= 0) close(pfd);
  }
}

/* Removes what is where E is after the run when it is not E's before-object (nor another's, parked later). */
static void remove_now(struct undo_run *r, struct undo_entry *e) {
  if (e->now.type == '-' || e->source >= 0 || state_same_object(&e->before, &e->now)) return;
  const char *name;
  int pfd = undo_parent_now(r, e, &name);
  if (pfd < 0 || unlinkat(pfd, name, e->now.type == 'd' ? AT_REMOVEDIR : 0) < 0) {
    undo_failed(r, e, strerror(errno));
    e->failed = 1;
  } else e->now.type = '-';
  if (pfd >= 0) close(pfd);
}

/* Puts E's before-object (a file's bytes, a symlink, a directory, a FIFO, a parked object) at its path. */
/* E's bytes from before the run (blob BLOB) into the file NAME beneath PFD (made when absent); -1 when
 * they could not be. */
static int restore_bytes(struct undo_run *r, struct undo_entry *e, int pfd, const char *name, const char *blob) {
  if (e->now.type == '-' && e->linked && linkat(r->blobs, blob, pfd, name, 0) == 0) return 0;
  int in = openat(r->blobs, blob, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  int flags = O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | (e->now.type == '-' ? O_CREAT | O_EXCL : 0);
  int out = openat(pfd, name, flags, 0600);
  /* A file the run left read-only (its owner may not write it): writable for the copy; its mode from
   * before the run is put back with the rest of its metadata. */
  if (out < 0 && errno == EACCES && e->now.type == 'f' &&
      fchmodat(pfd, name, (e->now.mode | 0200) & 07777, AT_SYMLINK_NOFOLLOW) == 0)
    out = openat(pfd, name, flags, 0600);
  struct stat is, os;
  int bad = in < 0 || out < 0 || fstat(in, &is) < 0 || fstat(out, &os) < 0 || !S_ISREG(os.st_mode) ||
            copy_bytes(in, out, is.st_size) < 0;
  if (in >= 0) close(in);
  if (out >= 0) close(out);
  return bad ? -1 : 0;
}

/* Puts E's before-object (a file's bytes, a symlink, a directory, a FIFO, a parked object) at its path. */
static void restore_object(struct undo_run *r, struct undo_entry *e) {
  if (e->before.type == '-' || e->before.type == 'o' || e->failed) return;
  const char *name;
  char blob[32], tmp[64];
  snprintf(blob, sizeof blob, "%d", e->blob);
  int pfd = undo_parent(r, e, &name), bad = pfd < 0;
  if (!bad && e->moved) {
    snprintf(tmp, sizeof tmp, ".aleph-undo-%d-%d", (int)getpid(), (int)(e - r->e));
    bad = renameat(r->root_fd[e->root], tmp, pfd, name) < 0;
  }
  /* What is at its name now: the removals, parks and moves back have changed what was there. */
  if (!bad) {
    free(e->now.target);
    state_of(pfd, name, &e->now);
  }
  if (bad || e->moved) {
    /* Moved back; a file the run also wrote gets its bytes back too. */
    if (!bad && e->before.type == 'f' && e->blob > 0 && !e->linked) bad = restore_bytes(r, e, pfd, name, blob) < 0;
  } else if (e->before.type == 'd' && e->now.type == '-') {
    bad = mkdirat(pfd, name, 0700) < 0;
  } else if (e->before.type == 'p' && e->now.type == '-') {
    bad = mknodat(pfd, name, S_IFIFO | 0600, 0) < 0;
  } else if (e->before.type == 'l' && e->now.type == '-') {
    bad = symlinkat(e->before.target == NULL ? "" : e->before.target, pfd, name) < 0;
  } else if (e->before.type == 'f' && e->blob > 0) {
    bad = restore_bytes(r, e, pfd, name, blob) < 0;
  } else if (e->before.type == 'f' && e->now.type == '-') {
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
  struct undo_entry **s = sorted(r, 0), **at = sorted(r, 1);
  if (s != NULL && at != NULL) {
    pair_renamed(r);
    park_renamed(r, at);
    for (int i = r->n - 1; i >= 0; i--)
      if (at[i]->now.type != 'd') remove_now(r, at[i]);
    for (int i = r->n - 1; i >= 0; i--)
      if (at[i]->now.type == 'd') remove_now(r, at[i]);
    for (int i = 0; i < r->n; i++) restore_object(r, s[i]);
    for (int i = r->n - 1; i >= 0; i--)
      if (s[i]->before.type != 'd') restore_meta(r, s[i]);
    for (int i = r->n - 1; i >= 0; i--)
      if (s[i]->before.type == 'd') restore_meta(r, s[i]);
  }
  free(s);
  free(at);
  free(r->parked);
  r->parked = NULL;
  r->nparked = 0;
}
