/*
 * Where a directory stands among git directories (gitctx.h). Walking up from a directory X: when its
 * parent P is a git directory and X is one of P's control entries (compared by (dev, ino), never by
 * name), everything below X lies in that control entry; else X lies where P does. The walk stops at the
 * root, at a directory decided before, or at the control entry found; each directory met is cached.
 */
#define _GNU_SOURCE
#include "gitctx.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gitdir.h"

#define GITCTX_SLOTS 1024

static struct gitdir_info *slots[GITCTX_SLOTS];

static struct gitdir_info *find(dev_t dev, ino_t ino) {
  for (struct gitdir_info *g = slots[(dev ^ ino) % GITCTX_SLOTS]; g != NULL; g = g->next)
    if (g->dev == dev && g->ino == ino) return g;
  return NULL;
}

static void show_path(int fd, char *out, size_t size) {
  char proc[64];
  snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
  ssize_t n = readlink(proc, out, size - 1);
  if (n < 0) n = snprintf(out, size, "(a directory no longer reachable)");
  out[n] = '\0';
}

/* The cache entry of directory FD (made, with its markers, when new). */
static struct gitdir_info *info_of(int fd, const struct stat *st) {
  struct gitdir_info *g = find(st->st_dev, st->st_ino);
  if (g != NULL) return g;
  int marks = git_marks_at(fd);
  if (marks < 0 || (g = calloc(1, sizeof *g)) == NULL) return NULL;
  *g = (struct gitdir_info){.dev = st->st_dev, .ino = st->st_ino, .marks = marks, .fd = -1, .root = -1};
  if (git_dir_like(marks)) {
    char path[4096];
    g->fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    show_path(fd, path, sizeof path);
    g->path = strdup(path);
  }
  g->next = slots[(st->st_dev ^ st->st_ino) % GITCTX_SLOTS];
  slots[(st->st_dev ^ st->st_ino) % GITCTX_SLOTS] = g;
  return g;
}

/* The control entry of git directory P (descriptor PFD) that X (XST) is, or NULL. */
static struct gitctl *control_of(const struct gitdir_info *p, int pfd, const struct stat *xst) {
  for (int i = 0; GIT_CONTROL[i] != NULL; i++) {
    struct stat st;
    if (fstatat(pfd, GIT_CONTROL[i], &st, AT_SYMLINK_NOFOLLOW) < 0 || st.st_ino != xst->st_ino ||
        st.st_dev != xst->st_dev)
      continue;
    struct gitctl *ctl = calloc(1, sizeof *ctl);
    char path[4200];
    if (ctl == NULL) return NULL;
    ctl->fd = fcntl(pfd, F_DUPFD_CLOEXEC, 3);
    snprintf(ctl->name, sizeof ctl->name, "%s", GIT_CONTROL[i]);
    snprintf(path, sizeof path, "%s/%s", p->path != NULL ? p->path : "", GIT_CONTROL[i]);
    ctl->path = strdup(path);
    return ctl;
  }
  return NULL;
}

/* Walks up from CUR (consumed) to a decided directory, the root, or a control entry; each directory met
 * is added to *CHAIN. 1 when decided (*CTL the control entry, or NULL), 0 when a step failed. */
static int walk_up(struct check *c, int cur, int root, struct gitdir_info ***chain, int *n, struct gitctl **ctl) {
  int cap = 0, decided = 0;
  struct stat st;
  while (!decided && cur >= 0 && fstat(cur, &st) == 0) {
    struct gitdir_info *g = info_of(cur, &st);
    if (g == NULL) break;
    g->root = root;
    if (g->ctl_known) {
      *ctl = g->ctl;
      decided = 1;
      break;
    }
    if (*n == cap) {
      cap = cap == 0 ? 32 : cap * 2;
      struct gitdir_info **p = realloc(*chain, (size_t)cap * sizeof *p);
      if (p == NULL) break;
      *chain = p;
    }
    (*chain)[(*n)++] = g;
    if (st.st_dev == c->roots[root].dev && st.st_ino == c->roots[root].ino) {
      decided = 1; /* the root lies in no control entry */
      break;
    }
    int up = openat(cur, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
    struct stat pst;
    close(cur);
    cur = up;
    if (up < 0 || fstat(up, &pst) < 0) break;
    struct gitdir_info *p = info_of(up, &pst);
    if (p != NULL && git_dir_like(p->marks) && (*ctl = control_of(p, up, &st)) != NULL) decided = 1;
  }
  if (cur >= 0) close(cur);
  return decided;
}

struct gitdir_info *gitctx_of(struct check *c, int fd, int root) {
  struct gitdir_info **chain = NULL;
  struct gitctl *ctl = NULL;
  int n = 0;
  int decided = walk_up(c, fcntl(fd, F_DUPFD_CLOEXEC, 3), root, &chain, &n, &ctl);
  struct stat st;
  struct gitdir_info *first = decided && fstat(fd, &st) == 0 ? find(st.st_dev, st.st_ino) : NULL;
  for (int i = 0; decided && i < n; i++) {
    chain[i]->ctl = ctl;
    chain[i]->ctl_known = 1;
  }
  free(chain);
  return first;
}

struct gitdir_info *gitctx_next(struct gitdir_info *prev) {
  if (prev != NULL && prev->next != NULL) return prev->next;
  size_t slot = prev == NULL ? 0 : (prev->dev ^ prev->ino) % GITCTX_SLOTS + 1;
  for (; slot < GITCTX_SLOTS; slot++)
    if (slots[slot] != NULL) return slots[slot];
  return NULL;
}

void gitctx_forget(void) {
  for (int i = 0; i < GITCTX_SLOTS; i++)
    for (struct gitdir_info *g = slots[i], *next; g != NULL; g = next) {
      next = g->next;
      if (g->fd >= 0) close(g->fd);
      free(g->path);
      free(g);
      slots[i] = NULL;
    }
}
