/*
 * The guard's snapshot, taken before the run (guard-snapshot.h): each protected path as a unit, its tree
 * recorded (type, mode, owner, inode, ctime, mtime) with a copy of every file and symlink target appended
 * to the snapshot's data file, within the bounds of guard-types.h; .git, .git/modules and .git/worktrees
 * as git's control entries and containers of git directories.
 */
#define _GNU_SOURCE
#include "guard-snapshot.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/errors.h"
#include "guard-tree.h"

/* What a git directory holds that git runs or reads as configuration; the rest is its data. */
static const char *const GIT_UNITS[] = {"config", "config.worktree", "commondir", "gitdir", "hooks", "info", NULL};
static const char *const GIT_CONTAINERS[] = {"modules", "worktrees", NULL};

int add_unit(struct guard *g, char kind, const char *rel) {
  g->units = grow(g->units, &g->capunits, g->nunits + 1, sizeof *g->units);
  struct gunit *u = &g->units[g->nunits];
  memset(u, 0, sizeof *u);
  u->kind = kind;
  u->rel = dup_str(rel);
  u->first = g->nentries;
  return g->nunits++;
}

int add_entry(struct guard *g, const struct gentry *e) {
  g->entries = grow(g->entries, &g->capentries, g->nentries + 1, sizeof *g->entries);
  g->entries[g->nentries] = *e;
  g->entries[g->nentries].rel = dup_str(e->rel);
  return g->nentries++;
}

static int add_stat(struct guard *g, char type, const struct stat *st, const char *rel) {
  struct gentry e = {
      .type = type,
      .mode = st->st_mode & 07777,
      .uid = st->st_uid,
      .gid = st->st_gid,
      .size = st->st_size,
      .dev = st->st_dev,
      .ino = st->st_ino,
      .cs = st->st_ctim.tv_sec,
      .cn = st->st_ctim.tv_nsec,
      .ms = st->st_mtim.tv_sec,
      .mn = st->st_mtim.tv_nsec,
      .data = -1,
      .rel = (char *)rel,
  };
  return add_entry(g, &e);
}

/* Drops the entries from FIRST on and the copies from DATALEN on: a unit that cannot be kept. */
static void drop_from(struct guard *g, int first, long long datalen) {
  for (int k = first; k < g->nentries; k++) free(g->entries[k].rel);
  g->nentries = first;
  if (ftruncate(g->datafd, datalen) < 0) die("launch: cannot truncate the protected-path snapshot: %s", strerror(errno));
  g->datalen = datalen;
}

/* A copy of BUF (LEN bytes), or of what IN holds (exactly SIZE bytes), at the end of the data file: its
 * offset, or -1. */
static long long new_copy(struct guard *g, int in, const char *buf, size_t len, long long size) {
  long long at = g->datalen;
  int ok = 1;
  if (in < 0) ok = pwrite_all(g->datafd, buf, len, at) == 0, g->datalen += (long long)len;
  else {
    static char chunk[65536];
    ssize_t r;
    while (ok && (r = read(in, chunk, sizeof chunk)) != 0) {
      if (r < 0 && errno == EINTR) continue;
      ok = r > 0 && g->datalen - at + r <= size && pwrite_all(g->datafd, chunk, (size_t)r, g->datalen) == 0;
      if (ok) g->datalen += r;
    }
    ok = ok && g->datalen - at == size;
  }
  return ok ? at : -1;
}

/* Records NAME (beneath DIRFD, at REL) and everything below it, with copies; -1 when it cannot be kept. */
static int keep(struct guard *g, int dirfd, const char *name, const char *rel, int depth) {
  struct stat st;
  if (depth > GUARD_MAX_DEPTH || g->nentries >= GUARD_MAX_ENTRIES) return -1;
  if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) return -1;
  char type = S_ISREG(st.st_mode) ? 'f' : S_ISDIR(st.st_mode) ? 'd' : S_ISLNK(st.st_mode) ? 'l' : 0;
  if (type == 0) return -1; /* a fifo, socket or device: nothing to rebuild it from */
  int k = add_stat(g, type, &st, rel);
  if (type == 'l') {
    char target[GUARD_PATH_MAX];
    ssize_t len = readlinkat(dirfd, name, target, sizeof target);
    if (len < 0 || len == (ssize_t)sizeof target || len != st.st_size) return -1;
    return (g->entries[k].data = new_copy(g, -1, target, (size_t)len, len)) < 0 ? -1 : 0;
  }
  if (type == 'f') {
    if (g->datalen + st.st_size > GUARD_MAX_BYTES) return -1;
    int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    struct stat now;
    if (fd < 0) return -1;
    if (fstat(fd, &now) == 0 && now.st_dev == st.st_dev && now.st_ino == st.st_ino)
      g->entries[k].data = new_copy(g, fd, NULL, 0, st.st_size);
    close(fd);
    return g->entries[k].data < 0 ? -1 : 0;
  }
  int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return -1;
  int n, rc = 0;
  char **names = list_names(fd, &n);
  char child[GUARD_PATH_MAX];
  if (n < 0) rc = -1;
  for (int i = 0; rc == 0 && i < n; i++)
    rc = join(child, rel, names[i]) < 0 ? -1 : keep(g, fd, names[i], child, depth + 1);
  free_names(names, n);
  close(fd);
  return rc;
}

/* A protected path compared and swapped whole: its tree, kept when within the bounds. */
static void snap_plain(struct guard *g, const char *rel) {
  int u = add_unit(g, 'p', rel);
  const char *base;
  int pfd = open_parent(g, rel, &base);
  struct stat st;
  if (pfd >= 0 && fstatat(pfd, base, &st, AT_SYMLINK_NOFOLLOW) == 0) {
    long long datalen = g->datalen;
    g->units[u].present = 1;
    g->units[u].kept = keep(g, pfd, base, rel, 0) == 0;
    if (!g->units[u].kept) drop_from(g, g->units[u].first, datalen);
  }
  if (pfd >= 0) close(pfd);
  g->units[u].count = g->nentries - g->units[u].first;
}

/* The directories below a container: git directories (they hold HEAD), others walked into. */
static int walk_container(struct guard *g, int fd, const char *rel, int depth) {
  int n, rc = 0;
  char **names = list_names(fd, &n);
  char child[GUARD_PATH_MAX];
  if (n < 0 || depth > GUARD_MAX_DEPTH) rc = -1;
  for (int i = 0; rc == 0 && i < n; i++) {
    struct stat st, head;
    if (join(child, rel, names[i]) < 0 || g->nentries >= GUARD_MAX_ENTRIES ||
        fstatat(fd, names[i], &st, AT_SYMLINK_NOFOLLOW) < 0) {
      rc = -1;
    } else if (!S_ISDIR(st.st_mode)) {
      add_stat(g, 'o', &st, child);
    } else {
      int c = openat(fd, names[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      int git = c >= 0 && fstatat(c, "HEAD", &head, AT_SYMLINK_NOFOLLOW) == 0;
      add_stat(g, git ? 'g' : 'i', &st, child);
      rc = c < 0 ? -1 : git ? 0 : walk_container(g, c, child, depth + 1);
      if (c >= 0) close(c);
    }
  }
  free_names(names, n);
  return rc;
}

static void snap_container(struct guard *g, const char *rel, int depth);

/* A git directory's control entries, each a unit; its modules and worktrees, containers. */
static void snap_gitdir(struct guard *g, const char *rel, int depth) {
  char child[GUARD_PATH_MAX];
  for (int i = 0; GIT_UNITS[i] != NULL; i++)
    if (join(child, rel, GIT_UNITS[i]) == 0) snap_plain(g, child);
  for (int i = 0; GIT_CONTAINERS[i] != NULL; i++)
    if (join(child, rel, GIT_CONTAINERS[i]) == 0) snap_container(g, child, depth);
}

static void snap_container(struct guard *g, const char *rel, int depth) {
  const char *base;
  int pfd = open_parent(g, rel, &base);
  struct stat st;
  int fd = -1;
  if (pfd >= 0 && fstatat(pfd, base, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode))
    fd = openat(pfd, base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (pfd >= 0) close(pfd);
  if (fd < 0) {
    snap_plain(g, rel); /* missing, or not a directory: a unit like any other */
    return;
  }
  int u = add_unit(g, 'c', rel);
  g->units[u].present = 1;
  int first = g->units[u].first;
  g->units[u].kept = walk_container(g, fd, rel, depth) == 0;
  close(fd);
  int gits = 0;
  for (int k = first; k < g->nentries; k++) gits += g->entries[k].type == 'g';
  /* Each git directory brings eight units: past the bounds the whole container is unchecked. */
  if (g->nentries + g->nunits + 8 * gits > GUARD_MAX_ENTRIES) g->units[u].kept = 0;
  if (!g->units[u].kept) drop_from(g, first, g->datalen);
  g->units[u].count = g->nentries - first;
  char **dirs = NULL;
  int cap = 0, n = 0;
  for (int k = first; k < first + g->units[u].count; k++) {
    if (g->entries[k].type != 'g') continue;
    dirs = grow(dirs, &cap, n + 1, sizeof *dirs);
    dirs[n++] = dup_str(g->entries[k].rel);
  }
  for (int k = 0; k < n; k++) snap_gitdir(g, dirs[k], depth + 1);
  free_names(dirs, n);
}

/* One of the run's protected paths. */
void snap_top(struct guard *g, const char *rel) {
  if (g->ntops < GUARD_MAX_PATHS) g->tops[g->ntops++] = dup_str(rel);
  struct stat st;
  if (strcmp(rel, ".git/modules") == 0 || strcmp(rel, ".git/worktrees") == 0) snap_container(g, rel, 0);
  else if (strcmp(rel, ".git") == 0 && fstatat(g->rootfd, rel, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode))
    snap_gitdir(g, rel, 0); /* protectAllGit: the control entries, not the repository's data */
  else snap_plain(g, rel);
}

/* Each entry's `end`: the index after its subtree (entries are in walk order, a directory first). */
void link_entries(struct guard *g) {
  for (int i = 0; i < g->nunits; i++) {
    const struct gunit *u = &g->units[i];
    for (int k = u->first; k < u->first + u->count; k++) {
      struct gentry *e = &g->entries[k];
      size_t len = strlen(e->rel);
      int j = k + 1;
      while (j < u->first + u->count && strncmp(g->entries[j].rel, e->rel, len) == 0 && g->entries[j].rel[len] == '/') j++;
      e->end = j;
    }
  }
}

