/*
 * The user paths the launcher opens (nodes.h): openat2 with RESOLVE_NO_SYMLINKS, and RESOLVE_BENEATH below
 * a parent, so a sandboxed command swapping a path meanwhile cannot redirect what is mounted. A missing
 * protected path is made as a stub and recorded under its root's lock.
 */
#define _GNU_SOURCE
#include "nodes.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../common/errors.h"
#include "../common/paths.h"
#include "roots.h"
#include "state.h"
#include "stubs.h"

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
  n->name = name;
  n->path = path;
  n->parent = -1;
  n->root = nnodes;
  n->rel[0] = '\0';
  n->fd = open_path(AT_FDCWD, path, RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
  if (n->fd < 0) die("launch: cannot open %s: %s", path, open_path_why(errno));
  if (fstat(n->fd, &n->st) < 0) die("launch: fstat %s: %s", path, strerror(errno));
  nnodes++;
}

/* The missing protected path REL beneath PARENT made as a stub of KIND for N (recorded in L's record), so
 * it can be mounted read-only: 1 when N is that stub, else 0 with N->fd what opening REL again gave. A
 * "dot" stub (KIND c) is a file holding ".", for files git reads as a path (commondir: "." is the
 * repository itself). */
static int made_stub(struct node *n, const struct node *parent, const char *rel, char kind, struct root_lock *l,
                     uint64_t resolve) {
  int made = stub_make(state_fd, parent->fd, &parent->st, rel, kind, n->rel);
  if (made < 0 && errno != EEXIST) die("launch: cannot create the stub %s: %s", n->rel, strerror(errno));
  n->fd = open_path(parent->fd, rel, resolve);
  if (made != 0 || n->fd < 0) return 0;
  if (fstat(n->fd, &n->st) < 0) die("launch: fstat %s: %s", n->rel, strerror(errno));
  stub_own_like(n->fd, &n->st, &parent->st);
  if (l == NULL) die("launch: a stub needs --state");
  stub_record(l->record, kind, &n->st, n->rel);
  return 1;
}

void open_below(const char *name, const char *parent_name, const char *rel, const char *kind) {
  if (nnodes >= MAX_NODES) die("launch: too many paths");
  if (strchr(rel, '/') != NULL || strcmp(rel, "..") == 0 || strcmp(rel, ".") == 0 || rel[0] == '\0')
    die("launch: %s is not a single path component", rel);
  int p = find_node(parent_name);
  struct node *n = &nodes[nnodes];
  n->name = name;
  n->parent = p;
  n->root = nodes[p].root;
  char above[sizeof n->rel];
  memcpy(above, nodes[p].rel, sizeof above);
  if (snprintf(n->rel, sizeof n->rel, "%s%s%s", above, above[0] ? "/" : "", rel) >= (int)sizeof n->rel)
    die("launch: path too long below %s", parent_name);
  struct root_lock *l = lock_root(n->root, nodes[n->root].fd, &nodes[n->root].st);
  uint64_t resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  n->fd = open_path(nodes[p].fd, rel, resolve);
  int dot = strcmp(kind, "dot") == 0;
  if (n->fd < 0 && errno == ENOENT && (strcmp(kind, "dir") == 0 || strcmp(kind, "file") == 0 || dot) &&
      made_stub(n, &nodes[p], rel, dot ? 'c' : kind[0], l, resolve)) {
    nnodes++;
    return;
  }
  if (n->fd < 0) die("launch: cannot open the protected path %s: %s", n->rel, open_path_why(errno));
  if (fstat(n->fd, &n->st) < 0) die("launch: fstat %s: %s", n->rel, strerror(errno));
  nnodes++;
}

void pass_nodes_on(void) {
  for (int k = 0; k < nnodes; k++) fcntl(nodes[k].fd, F_SETFD, 0);
}

void close_nodes(void) {
  for (int k = 0; k < nnodes; k++) close(nodes[k].fd);
}
