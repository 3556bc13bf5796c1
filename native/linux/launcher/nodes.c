/*
 * The user paths the launcher opens (nodes.h): openat2 with RESOLVE_NO_SYMLINKS, and RESOLVE_BENEATH below
 * a parent, so a sandboxed command swapping a path meanwhile cannot redirect what is mounted. Protection
 * is decided from what is opened here, not from the plan: a protected path that is there is mounted
 * read-only (and exempt from the check after the run, since it cannot change through the run); one that
 * is not is recorded, and set aside after the run if it exists then.
 */
#define _GNU_SOURCE
#include "nodes.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../after-run/absent.h"
#include "../after-run/check.h"
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
    n->fd = open_path(nodes[p].fd, rel, RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
    if (n->fd < 0 && errno != ENOENT) die("launch: cannot open the protected path %s: %s", n->rel, open_path_why(errno));
    n->absent = n->fd < 0;
  }
  if (!n->absent && fstat(n->fd, &n->st) < 0) die("launch: fstat %s: %s", n->rel, strerror(errno));
  n->read_only = !n->absent && (n->kind == 'r' || !S_ISDIR(n->st.st_mode));
  if (n->read_only) check_exempt(&n->st);
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
