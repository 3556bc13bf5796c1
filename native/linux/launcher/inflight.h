/*
 * Runs in progress: each run leaves a record under --state, locked while it runs and removed once the
 * checks after it are done, so that a run killed whole (SIGKILL to every process of it: the OOM killer, a
 * container's kill, a host crash) before its check is found by the next run, which checks for it first.
 * The details: inflight.c.
 */
#ifndef ALEPH_LAUNCHER_INFLIGHT_H
#define ALEPH_LAUNCHER_INFLIGHT_H

#include <stdio.h>

/* ARGV's value of the launcher option NAME (before `--`), or NULL. Values are absolute paths, names,
 * numbers and modes, never an option's name, so a plain look for the name is enough. */
const char *launch_option(int argc, char **argv, const char *name);
/* Before the options are read: with --state, every record of a run that is gone (its lock free) and shares
 * a root with this run (its --check-root paths) is checked for now — its writable roots walked whole, its
 * absent protected paths looked at, what changed since its start set aside into its quarantine, reported
 * to REPORT as `earlier-…` lines — and removed. Dies (the record kept) when that check cannot finish. A
 * record sharing a root with a live run waits for a later run (no check races a running command). */
void inflight_sweep(int argc, char **argv, FILE *report);
/* After check_prepare, before PROGRAM: this run's record, made and locked. */
void inflight_begin(void);
/* Once the checks after the run are done: this run's record removed and unlocked. */
void inflight_end(void);

#endif
