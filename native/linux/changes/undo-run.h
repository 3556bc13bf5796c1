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
  char *rel;     /* its name before the run: where undo puts it back */
  char *now_rel; /* where it is after the run (a directory above it moved), or NULL: at rel */
  int gone;      /* nowhere after the run: a move replaced or took away where it was */
  int blob, linked;
  struct path_state before, after, now;
  int moved; /* its object is parked under a temporary name (a rename reversed) */
  char parked[48]; /* the temporary name what was where it is after the run was parked under, or "" */
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
  struct undo_entry **parked; /* the entries parked so far (their now paths lead to their temporary names) */
  int nparked;
};

/* Opens the parent of entry E's name before the run beneath its root; *NAME its last component. -1 with
 * errno. undo_parent_now: of where it is after the run. */
int undo_parent(const struct undo_run *r, const struct undo_entry *e, const char **name);
int undo_parent_now(const struct undo_run *r, const struct undo_entry *e, const char **name);
/* Where E is after the run (relative to its root). */
const char *undo_now_rel(const struct undo_entry *e);
/* Reports a path that could not be put back (into the result's conflicts). */
void undo_failed(const struct undo_run *r, const struct undo_entry *e, const char *why);
/* Starts the conflicts over (empty). */
void undo_conflicts_reset(void);
/* How many conflicts so far, and their JSON items (comma-separated). */
int undo_nconflicts(void);
const char *undo_conflicts_text(void);
/* ROOT/REL of entry E into F as a JSON string: its name before the run, or with NOW where it is after. */
void undo_json_path(FILE *f, const struct undo_run *r, const struct undo_entry *e, int now);

#endif
