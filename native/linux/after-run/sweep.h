/*
 * The git sweep after the run (`--git-sweep`): control files of repositories a command created or changed
 * below a writable root, renamed aside so host git never runs or reads them.
 */
#ifndef ALEPH_AFTER_RUN_SWEEP_H
#define ALEPH_AFTER_RUN_SWEEP_H

#include <stdio.h>
#include <sys/types.h>
#include <time.h>

/* An inode the sweep leaves alone (a stub: a mount point of a running sandbox). */
struct sweep_skip {
  dev_t dev;
  ino_t ino;
};

struct sweep_root {
  int fd;           /* the writable root (O_PATH is enough) */
  const char *name; /* its path, for the report */
  dev_t top_dev;    /* its own .git when that existed at the start (0: none) */
  ino_t top_ino;
  const struct sweep_skip *skip;
  int nskip;
};

/* Sweeps ROOTS for what changed since START, reporting to REPORT (may be NULL). */
void git_sweep(const struct sweep_root *roots, int nroots, const struct timespec *start, FILE *report);

#endif
