/*
 * The user paths the launcher opens (--open NAME PATH, --open-in NAME PARENT REL KIND): each an O_PATH
 * descriptor, named for PROGRAM's arguments (@NAME), opened without following a symlink so what is mounted
 * later is exactly what was opened here.
 */
#ifndef ALEPH_LAUNCHER_NODES_H
#define ALEPH_LAUNCHER_NODES_H

#include <sys/stat.h>

#define MAX_NODES 128

struct node {
  const char *name;
  const char *path; /* for --open nodes */
  int fd;
  int parent; /* index of the node this one was opened beneath, or -1 */
  int root;   /* index of the top node (a writable root or grant) */
  char rel[1024]; /* path below the root, for the stub record */
  struct stat st;
};

extern struct node nodes[MAX_NODES];
extern int nnodes;

/* The index of the node NAME; dies when there is none. */
int find_node(const char *name);
/* --open: the absolute PATH, no symlink on the way. */
void open_root(const char *name, const char *path);
/* --open-in: the single component REL beneath the node PARENT_NAME; a missing one of KIND dir, file or dot
 * is made as a stub (stubs.c) under its root's lock (roots.c). */
void open_below(const char *name, const char *parent_name, const char *rel, const char *kind);
/* Every node's descriptor stays open across PROGRAM's exec (the others of this process close). */
void pass_nodes_on(void);
/* Closes every node's descriptor (PROGRAM has its own). */
void close_nodes(void);

#endif
