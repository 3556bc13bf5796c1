/*
 * Running PROGRAM (bwrap, or tier 3's helper) from the launcher: with a fixed environment, in the run's
 * cgroup, killed first by SIGTERM, SIGINT, SIGHUP or the death of the launcher's parent so the cleanup
 * after it still runs (after-run/check.c waits for it); the launcher then exits as PROGRAM did.
 */
#ifndef ALEPH_LAUNCHER_PROGRAM_H
#define ALEPH_LAUNCHER_PROGRAM_H

#include <signal.h>
#include <sys/types.h>
#include <time.h>

/* At the start: blocks the stop signals until PROGRAM runs (*OLD: the mask before) and turns the parent's
 * death (even SIGKILL) into SIGTERM; dies when the parent is already gone. */
void hold_stop_signals(sigset_t *old);
/* Moves this process (and so PROGRAM) into the cgroup DIR (--enter-cgroup). */
void enter_run_cgroup(const char *dir);
/* Forks and execs PROG with the fixed environment; START: when (coarse clock, as ctimes are). A stop
 * signal that arrived during set-up, or arrives now, kills PROGRAM. With OUTER_NS, PROGRAM starts as uid 0
 * of a user namespace of its own (mapping this process's uid and gid alone) and in a network namespace
 * owned by it: where bwrap cannot make either itself (gVisor refuses mount propagation changes in a user
 * namespace nested in another, and its netlink the loopback address bwrap sets), bwrap runs inside them
 * with neither --unshare-user nor --unshare-net (and mounts by path: stage.c is not tried there). Otherwise,
 * with STAGE, PROGRAM's binds are staged clones of the checked descriptors (stage.c). PROGRAM's pid. */
pid_t start_program(char **prog, const sigset_t *old, struct timespec *start, int outer_ns, int stage);
/* The launcher's exit as PROGRAM's (STATUS): its code, or its signal raised again (128 + it otherwise). */
int exit_as_program(int status);

#endif
