/*
 * Setting aside what a command wrote where host tools would read it: renamed aside in its own directory,
 * or removed, each step reported.
 */
#ifndef ALEPH_AFTER_RUN_QUARANTINE_H
#define ALEPH_AFTER_RUN_QUARANTINE_H

#include <stdio.h>

/* Renames NAME (beneath DIRFD) to NAME.aleph-quarantined[-N] and reports `quarantined PATH`; where no
 * such name can be had, removes it (`removed PATH`). 0 when it is gone from NAME, else `failed PATH: …`. */
int set_aside(int dirfd, const char *name, FILE *report, const char *path);
/* Removes NAME beneath DIRFD and everything below it, on descriptors; 0 when it is gone. */
int remove_entry(int dirfd, const char *name, int depth);

#endif
