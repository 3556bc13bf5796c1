/*
 * The helper's command line, in the sandbox (and in tier 3's `--direct`): OPTIONS -- PROGRAM ARGS….
 * The mount operations among the options are kept by mounts.c, in their order.
 */
#ifndef ALEPH_HELPER_OPTIONS_H
#define ALEPH_HELPER_OPTIONS_H

#include "../bridge/bridge.h"
#include "landlock.h"
#include "ns-limits.h"
#include "rlimits.h"

struct options {
  long uid, gid;
  struct rlimit_set rlimits;
  struct ns_limits ns_limits;
  struct landlock_rules landlock;
  struct bridge_plan bridge;
  int seccomp_fd;
  int env_fd;
  int changes_fd; /* --changes-fd: the socket to the launcher's change supervisor (-1: none) */
  int changes_deny_spawn; /* --changes-spawn deny: the trapping filter refuses process creation */
  const char *chdir; /* after the mounts and the identity drop */
  char **argv;
};

/* Reads ARGV (its options from ARGV[1] on) into O; dies on an unknown, incomplete or bad option. */
void parse_args(int argc, char **argv, struct options *o);

#endif
