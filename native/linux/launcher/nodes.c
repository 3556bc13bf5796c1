/*
 * The user paths the launcher opens (nodes.h): openat2 with RESOLVE_NO_SYMLINKS, and RESOLVE_BENEATH below
 * a parent, so a sandboxed command swapping a path meanwhile cannot redirect what is mounted; a path that
 * is a symlink itself when opened is refused too (a descriptor of the link would be checked and mounted
 * in place of the directory swapped back later, leaving that one writable through its parent). Protection
 * is decided from what is opened here, not from the plan: a protected path that is there is mounted
 * read-only (and exempt from the check after the run, unless it changed during it: set_aside_moved); one that
 * is not is recorded, and set aside after the run if it exists then.
 */
#define _GNU_SOURCE
#include "nodes.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../after-run/absent.h"
#include "../after-run/check.h"
#include "../after-run/quarantine.h"
#include "../common/errors.h"
#include "../common/paths.h"

struct node nodes[MAX_NODES];
int nnodes;

int find_node(const char *name) {
  for (int i = 0; i < nnodes; i++)
    if (strcmp(nodes[i].name, name) == 0) return i;
  die("launch: no descriptor named %s", name);
}

void open_root(const char *name, const char *path) {
  if (nnodes >= MAX_NODES) die("launch: too many paths");
  if (path[0] != '/') die("launch: %s is not absolute", path);
  struct node *n = &nodes[nnodes];
  *n = (struct node){.name = name, .path = path, .parent = -1, .root = nnodes, .kind = '-', .host_fd = -1};
  n->fd = open_path(AT_FDCWD, path, RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
  if (n->fd < 0) die("launch: cannot open %s: %s", path, open_path_why(errno));
  if (fstat(n->fd, &n->st) < 0) die("launch: fstat %s: %s", path, strerror(errno));
  nnodes++;
}

int node_host_fd(int k) {
  struct node *n = &nodes[k];
  if (n->host_fd < 0 && n->cloned) die("launch: %s is needed on the host after it was cloned", n->name);
  if (n->host_fd < 0 && n->fd >= 0) n->host_fd = fcntl(n->fd, F_DUPFD_CLOEXEC, 3);
  if (n->fd >= 0 && n->host_fd < 0) die("launch: dup: %s", strerror(errno));
  return n->host_fd;
}

/* A protected path N is absent: recorded below its deepest present ancestor. */
static void record_absent(struct node *n) {
  int k = n->parent;
  while (nodes[k].absent) k = nodes[k].parent;
  if (!S_ISDIR(nodes[k].st.st_mode)) return; /* nothing can be below a file */
  const char *rest = n->rel + strlen(nodes[k].rel) + (nodes[k].rel[0] != '\0');
  char shown[2200];
  snprintf(shown, sizeof shown, "%s/%s", nodes[n->root].path, n->rel);
  absent_add(node_host_fd(k), rest, shown, strlen(nodes[n->root].path));
}

void open_below(const char *name, const char *parent_name, const char *rel, const char *kind) {
  if (nnodes >= MAX_NODES) die("launch: too many paths");
  if (strchr(rel, '/') != NULL || strcmp(rel, "..") == 0 || strcmp(rel, ".") == 0 || rel[0] == '\0')
    die("launch: %s is not a single path component", rel);
  if (strcmp(kind, "way") != 0 && strcmp(kind, "ro") != 0) die("launch: --open-in: unknown kind %s", kind);
  int p = find_node(parent_name);
  struct node *n = &nodes[nnodes];
  *n = (struct node){.name = name, .parent = p, .root = nodes[p].root, .kind = kind[0] == 'w' ? 'w' : 'r', .fd = -1,
                     .host_fd = -1};
  char above[sizeof n->rel];
  memcpy(above, nodes[p].rel, sizeof above);
  if (snprintf(n->rel, sizeof n->rel, "%s%s%s", above, above[0] ? "/" : "", rel) >= (int)sizeof n->rel)
    die("launch: path too long below %s", parent_name);
  if (nodes[p].absent || !S_ISDIR(nodes[p].st.st_mode)) {
    n->absent = 1;
  } else {
    n->fd = open_path_nolink(nodes[p].fd, rel, RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
    if (n->fd < 0 && errno != ENOENT) die("launch: cannot open the protected path %s: %s", n->rel, open_path_why(errno));
    n->absent = n->fd < 0;
  }
  if (!n->absent && fstat(n->fd, &n->st) < 0) die("launch: fstat %s: %s", n->rel, strerror(errno));
  n->read_only = !n->absent && (n->kind == 'r' || !S_ISDIR(n->st.st_mode));
  if (n->read_only) check_exempt(&n->st);
  /* Kept on the host for set_aside_moved, before a clone can replace it (with its parent, the fallback's). */
  if (n->read_only) node_host_fd(nnodes), node_host_fd(p);
  if (n->absent && n->kind == 'r') record_absent(n);
  nnodes++;
}

void pass_nodes_on(void) {
  for (int k = 0; k < nnodes; k++)
    if (nodes[k].fd >= 0) fcntl(nodes[k].fd, F_SETFD, 0);
}

void close_nodes(void) {
  for (int k = 0; k < nnodes; k++)
    if (nodes[k].fd >= 0) close(nodes[k].fd);
}

/* ST changed (ctime: content, entries, owner, mode, a rename) at or after SINCE. */
static int newer(const struct stat *st, const struct timespec *since) {
  return st->st_ctim.tv_sec > since->tv_sec ||
         (st->st_ctim.tv_sec == since->tv_sec && st->st_ctim.tv_nsec >= since->tv_nsec);
}

/* Sets aside, below the directory FD (O_PATH), each entry that changed at or after SINCE, a changed
 * directory whole (an unchanged one is looked into); SHOWN is FD's path as the run named it. -1 when that
 * cannot be done (unreadable, more than *BUDGET entries, a set-aside that failed). */
static int set_aside_changed(int fd, const char *shown, const struct timespec *since, int *budget, FILE *report) {
  int d = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  DIR *dir = d < 0 ? NULL : fdopendir(d);
  if (dir == NULL) {
    if (d >= 0) close(d);
    return -1;
  }
  int rc = 0;
  struct dirent *e;
  while (rc == 0 && (e = readdir(dir)) != NULL) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    char path[4096];
    struct stat st;
    if (--*budget < 0 || snprintf(path, sizeof path, "%s/%s", shown, e->d_name) >= (int)sizeof path ||
        fstatat(dirfd(dir), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
      rc = -1;
    } else if (newer(&st, since)) {
      rc = set_aside(dirfd(dir), e->d_name, report, path);
    } else if (S_ISDIR(st.st_mode)) {
      int sub = openat(dirfd(dir), e->d_name, O_PATH | O_NOFOLLOW | O_DIRECTORY | O_CLOEXEC);
      rc = sub < 0 ? -1 : set_aside_changed(sub, path, since, budget, report);
      if (sub >= 0) close(sub);
    }
  }
  closedir(dir);
  return rc;
}

void set_aside_moved(const struct timespec *start, FILE *report) {
  const struct timespec since = *start; /* the timestamps' own coarse clock (program.c) */
  for (int k = 0; k < nnodes; k++) {
    struct node *n = &nodes[k];
    struct stat st;
    if (n->absent || !n->read_only || n->host_fd < 0) continue;
    if (fstat(n->host_fd, &st) == 0 && !newer(&st, &since)) continue; /* never moved nor changed */
    char shown[2200];
    snprintf(shown, sizeof shown, "%s/%s", nodes[n->root].path, n->rel);
    int budget = 1 << 16;
    if (S_ISDIR(n->st.st_mode) && set_aside_changed(n->host_fd, shown, &since, &budget, report) == 0) continue;
    /* A file, or what changed cannot be told: the protected path is set aside whole, as an absent one is. */
    const struct node *p = &nodes[n->parent];
    absent_add(p->host_fd, n->rel + strlen(p->rel) + (p->rel[0] != '\0'), shown, strlen(nodes[n->root].path));
  }
}
