/*
 * The program's resource limits (--rlimit NAME=SOFT[:HARD]), set by the helper after the identity change
 * (so RLIMIT_NPROC counts the new uid) and after the bridge's fork (so they are the program's alone).
 */
#ifndef ALEPH_HELPER_RLIMITS_H
#define ALEPH_HELPER_RLIMITS_H

#include <sys/resource.h>

#define MAX_RLIMITS 16

struct rlimit_set {
  struct {
    int resource;
    rlim_t soft, hard;
  } items[MAX_RLIMITS];
  int n;
};

/* Adds SPEC (NAME=SOFT[:HARD], NAME one of AS NPROC CORE NOFILE FSIZE CPU) to SET; dies on a bad one. */
void rlimit_add(struct rlimit_set *set, const char *spec);
void apply_rlimits(const struct rlimit_set *set);

#endif
