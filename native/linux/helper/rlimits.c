/* The program's resource limits (rlimits.h): read from --rlimit, set with setrlimit. */
#define _GNU_SOURCE
#include "rlimits.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "../common/errors.h"

static int rlimit_resource(const char *name) {
  if (strcmp(name, "AS") == 0) return RLIMIT_AS;
  if (strcmp(name, "NPROC") == 0) return RLIMIT_NPROC;
  if (strcmp(name, "CORE") == 0) return RLIMIT_CORE;
  if (strcmp(name, "NOFILE") == 0) return RLIMIT_NOFILE;
  if (strcmp(name, "FSIZE") == 0) return RLIMIT_FSIZE;
  if (strcmp(name, "CPU") == 0) return RLIMIT_CPU;
  die("unknown rlimit %s", name);
  return -1;
}

void rlimit_add(struct rlimit_set *set, const char *spec) {
  char name[16];
  unsigned long long soft, hard;
  int n = sscanf(spec, "%15[A-Z]=%llu:%llu", name, &soft, &hard);
  if (n == 2) hard = soft;
  else if (n != 3) die("bad --rlimit %s (want NAME=SOFT[:HARD])", spec);
  if (set->n >= MAX_RLIMITS) die("too many --rlimit");
  set->items[set->n].resource = rlimit_resource(name);
  set->items[set->n].soft = (rlim_t)soft;
  set->items[set->n].hard = (rlim_t)hard;
  set->n++;
}

void apply_rlimits(const struct rlimit_set *set) {
  for (int i = 0; i < set->n; i++) {
    struct rlimit r = {set->items[i].soft, set->items[i].hard};
    if (setrlimit(set->items[i].resource, &r) < 0) die("setrlimit(%d): %s", set->items[i].resource, strerror(errno));
  }
}
