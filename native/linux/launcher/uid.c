/*
 * The run's own uid (uid.h): the range is tried from a place that depends on this process's pid, so
 * launchers starting together rarely contend for one lock.
 */
#define _GNU_SOURCE
#include "uid.h"

#include <stdio.h>
#include <sys/file.h>
#include <unistd.h>

#include "../common/errors.h"
#include "state.h"

long pick_uid(long lo, long hi) {
  if (state_fd < 0) die("launch: --uid-range needs --state");
  if (lo < 1 || hi < lo) die("launch: bad uid range %ld-%ld", lo, hi);
  long span = hi - lo + 1;
  for (long k = 0; k < span; k++) {
    long uid = lo + (getpid() + k) % span;
    char name[48];
    snprintf(name, sizeof name, "uid-%ld.lock", uid);
    int fd = state_file(name, 0);
    if (flock(fd, LOCK_EX | LOCK_NB) == 0) return uid; /* the descriptor stays open (and locked) */
    close(fd);
  }
  die("launch: every uid of %ld-%ld is in use by a running command; widen the sandbox uid range", lo, hi);
}
