/*
 * The roots the launcher sweeps after the run (--git-sweep NAME): opened before any clone, swept by
 * after-run/sweep.c with every run's stubs left alone.
 */
#ifndef ALEPH_LAUNCHER_SWEEPS_H
#define ALEPH_LAUNCHER_SWEEPS_H

#include <stdio.h>
#include <time.h>

/* --git-sweep NAME: the node NAME (opened with --open) is swept after the run. */
void sweep_root(const char *name);
/* After the run (started at START): the git sweep of every root named, reported to REPORT. */
void sweep_roots(const struct timespec *start, FILE *report);

#endif
