/*
 * The user paths the launcher opens (--open NAME PATH, --open-in NAME PARENT REL KIND): each an O_PATH
 * descriptor, named for PROGRAM's arguments (@NAME), opened without following a symlink so what is mounted
 * later is exactly what was opened here. A protected path (KIND ro) is read-only when it is there and
 * checked after the run when it is not; nothing is made in its place.
 */
#ifndef ALEPH_LAUNCHER_NODES_H
#define ALEPH_LAUNCHER_NODES_H

#include <stdio.h>
#include <sys/stat.h>
#include <time.h>

#define MAX_NODES 1024

struct node {
  const char *name;
  const char *path; /* for --open nodes */
  int fd;           /* -1 when absent */
  int parent;       /* index of the node this one was opened beneath, or -1 */
  int root;         /* index of the top node (a writable root or grant) */
  char kind;        /* '-' an --open node, 'w' a directory on the way, 'r' a protected path */
  int absent;       /* not there when opened: its mounts are dropped from PROGRAM's arguments */
  int read_only;    /* mounted read-only: a protected path, or a non-directory on the way */
  int host_fd;      /* a descriptor of it on the host, kept for the check after the run (or -1) */
  int cloned;       /* fd is a detached mount of it now (clone.c) */
  char rel[1024];   /* path below the root */
  struct stat st;
};

extern struct node nodes[MAX_NODES];
extern int nnodes;

/* The index of the node NAME; dies when there is none. */
int find_node(const char *name);
/* --open: the absolute PATH, no symlink on the way. */
void open_root(const char *name, const char *path);
/* --open-in: the single component REL beneath the node PARENT_NAME, of KIND `way` (a directory on the way
 * to protected paths: bound onto itself so it cannot be renamed; read-only when it is not a directory) or
 * `ro` (a protected path: read-only). Absent, or below an absent or non-directory node: the node is
 * absent, and a protected path is recorded for the check after the run (after-run/absent.c). */
void open_below(const char *name, const char *parent_name, const char *rel, const char *kind);
/* A descriptor of node K on the host, for the check after the run; dies once a clone replaced the node's
 * own. */
int node_host_fd(int k);
/* After the run, before the check (which exempts what was read-only): a path mounted read-only (a
 * protected path, a `.git` file on the way) that changed since START (coarse clock) was changed from outside
 * the run. Moved by a command of another sandbox, it was meanwhile under another name of this run's writable
 * mounts, where the read-only mount (which stays on it, at the place it left) does not cover it: so what
 * changed below a directory is set aside (reported), and a file, or a directory where that cannot be told,
 * whole (as an absent protected path is, by its name). A host process changing it during the run has its
 * change set aside too (failing closed). */
void set_aside_moved(const struct timespec *start, FILE *report);
/* Every present node's descriptor stays open across PROGRAM's exec (the others of this process close). */
void pass_nodes_on(void);
/* Closes every node's descriptor (PROGRAM has its own). */
void close_nodes(void);

#endif
