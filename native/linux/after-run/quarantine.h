/*
 * Setting aside what a command left where host tools would read it: copied out of the user's tree into
 * the session's quarantine (`--quarantine DIR`), never executable, the original removed, each reported.
 */
#ifndef ALEPH_AFTER_RUN_QUARANTINE_H
#define ALEPH_AFTER_RUN_QUARANTINE_H

#include <stdio.h>

/* The quarantine directory: DIR (absolute), made (0700) and opened at the first set_aside, never through
 * a symlink. Without one, what is set aside is removed. */
void quarantine_use(const char *dir);
/* The quarantine directory in use (NULL: none); quarantine_use again switches to another one (the check of
 * an interrupted earlier run sets aside into that run's quarantine, launcher/inflight.c). */
const char *quarantine_dir(void);
/* --quarantine-budget RUN:SESSION: the copies' budgets in bytes (after-run/keep.h), of this run and of the
 * session's quarantine; dies on a bad value. */
void quarantine_budget(const char *spec);
/* Sets aside NAME beneath DIRFD (shown as PATH, an absolute path): copied to the quarantine as DIR/PATH
 * (after-run/keep.h: owner-only, never executable), replacing what an earlier run put there for the same
 * path, removed from DIRFD, and reported `quarantined PATH<TAB>WHERE`; where the copy cannot take it (over
 * a budget, or failed) it is removed all the same, reported `notkept PATH: why` then `removed PATH`. 0
 * when it is gone from NAME (already gone included), else reported `failed PATH: why`. */
int set_aside(int dirfd, const char *name, FILE *report, const char *path);

#endif
