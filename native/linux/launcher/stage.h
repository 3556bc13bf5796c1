/*
 * Tier 2's mounts from the descriptors the launcher checked, on a host without CAP_SYS_ADMIN: PROGRAM's
 * child stages a clone of each in a mount namespace of its own, and bwrap binds the clones (stage.c).
 */
#ifndef ALEPH_LAUNCHER_STAGE_H
#define ALEPH_LAUNCHER_STAGE_H

/* PROGRAM's argument I is node K's descriptor now: a bind (`--bind-fd`, `--ro-bind-fd`) to stage, or
 * another use, which keeps the descriptor open across the exec. */
void stage_note(char **prog, int i, int k);
/* Whether there is a bind to stage, and a state directory with its empty `stage` directory (made here). */
int stage_planned(void);
/* In PROGRAM's child, before the exec: stages every bind and rewrites PROG to bind the clones; leaves PROG
 * as it is where the kernel refuses a step; dies (on the set-up status channel) when a node was swapped. */
void stage_mounts(char **prog);

#endif
