/*
 * Setting aside what a command left where host tools would read it: moved out of the user's tree into
 * the session's quarantine (`--quarantine DIR`), made never executable, each move reported.
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
/* Sets aside NAME beneath DIRFD (shown as PATH, an absolute path): moved to the quarantine as DIR/PATH,
 * replacing what an earlier run put there for the same path, stripped of x and set-id bits, and reported
 * `quarantined PATH<TAB>WHERE`; where neither a rename nor a copy (another filesystem, within tree.h's
 * budget) can take it, removed (`removed PATH`). 0 when it is gone from NAME (already gone included), else
 * reported `failed PATH: why`. */
int set_aside(int dirfd, const char *name, FILE *report, const char *path);

#endif
