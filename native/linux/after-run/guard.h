/*
 * Tier 3's guard of protected paths (`--guard ROOT REL`), as the launcher uses it: one per writable root,
 * a snapshot taken (or shared) before the run and checked after it. The details: guard.c.
 */
#ifndef ALEPH_AFTER_RUN_GUARD_H
#define ALEPH_AFTER_RUN_GUARD_H

#include <stdio.h>
#include <sys/stat.h>
#include <sys/types.h>

struct guard;

/* The guard of the root ROOTFD (at ROOT; DEV and INO name its snapshot's files). */
struct guard *guard_new(int rootfd, const char *root, dev_t dev, ino_t ino);
/* Adds REL (relative, below the root) to the run's protected paths; dies on a bad one. */
void guard_path(struct guard *g, const char *rel);
/* Under the root's lock. FRESH: no other run uses the root (a snapshot left now is a killed run's). */
void guard_prepare(struct guard *g, int state_fd, int fresh, FILE *report);
/* Calls EACH with the stat of every protected path the snapshot holds whole (not .git/modules or
 * .git/worktrees, whose git directories the check after the run looks into): the guard answers for them. */
void guard_each_whole(const struct guard *g, void (*each)(const struct stat *st));
/* After the run: what differs from the snapshot is set aside and put back, reported to REPORT. */
void guard_check(struct guard *g, FILE *report);
/* The last run using the root: its snapshot goes, files and all (they are under STATE_FD). */
void guard_discard(struct guard *g, int state_fd);

#endif
