/*
 * A run being undone: its roots (opened again, no symlink on the way), its changed paths with their states
 * before, after and now, and the conflicts met so far (the JSON items of the result).
 */
#ifndef ALEPH_CHANGES_UNDO_RUN_H
#define ALEPH_CHANGES_UNDO_RUN_H

#include <stdio.h>

#include "state.h"

/* One changed path of the run. */
struct undo_entry {
  int root;
  char *rel;
  int blob, linked;
  struct path_state before, after, now;
  int moved; /* its object is parked under a temporary name (a rename reversed) */
  int source; /* the entry whose before-object this one's after-object is (-1: none) */
  int failed; /* a step of its undo failed (named once in the conflicts; later steps skip it) */
};

struct undo_run {
  int nroots;
  char *root_path[64];
  int root_fd[64];
  int blobs;
  struct undo_entry *e;
  int n;
};

/* Opens the parent of entry E beneath its root; *NAME its last component. -1 with errno. */
int undo_parent(const struct undo_run *r, const struct undo_entry *e, const char **name);
/* Reports a path that could not be put back (into the result's conflicts). */
void undo_failed(const struct undo_run *r, const struct undo_entry *e, const char *why);
/* Starts the conflicts over (empty). */
void undo_conflicts_reset(void);
/* How many conflicts so far, and their JSON items (comma-separated). */
int undo_nconflicts(void);
const char *undo_conflicts_text(void);
/* ROOT/REL of entry E into F as a JSON string. */
void undo_json_path(FILE *f, const struct undo_run *r, const struct undo_entry *e);

#endif
