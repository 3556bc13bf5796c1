/*
 * What the supervisor refused during a run, counted for the run's `states` file: process creations per
 * program (its comm) and writes a read-only mount refused per path, each at most 16 names (the writes
 * beyond them counted together).
 */
#ifndef ALEPH_CHANGES_TALLIES_H
#define ALEPH_CHANGES_TALLIES_H

#include <stdio.h>

/* A refused process creation by the program named COMM. */
void store_spawn_refused(const char *comm);
/* A write to PATH (outside every writable root) that a read-only mount refused. */
void store_write_refused(const char *path);
/* The `spawn`, `rofs` and `rofs-more` lines of `states` into F. */
void tallies_write(FILE *f);

#endif
