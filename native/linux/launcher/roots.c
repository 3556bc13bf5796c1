/*
 * Tier 3's guarded roots' locks (roots.h). Per root, under --state: `root-DEV-INO.mutex`, held while a run
 * takes or shares the root's snapshot (and while it checks at its end); `.users`, held shared by every run
 * using the root, so one that gets it exclusively knows it is alone.
 */
#define _GNU_SOURCE
#include "roots.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "../after-run/check.h"
#include "../after-run/guard.h"
#include "../common/errors.h"
#include "state.h"

#define MAX_ROOTS 1024 /* as many as the launcher opens paths (MAX_NODES) */

static struct root_lock locks[MAX_ROOTS];
static int nlocks;

/* L's mutex, locked, while it is still the file of that name (the last run using a root removes it). */
static void lock_mutex(struct root_lock *l) {
  char name[96];
  for (;;) {
    snprintf(name, sizeof name, "%s.mutex", l->prefix);
    l->mutex = state_file(name, 0);
    if (flock(l->mutex, LOCK_EX) < 0) die("launch: flock: %s", strerror(errno));
    struct stat held, named;
    if (fstat(l->mutex, &held) == 0 && fstatat(state_fd, name, &named, AT_SYMLINK_NOFOLLOW) == 0 &&
        held.st_dev == named.st_dev && held.st_ino == named.st_ino)
      break;
    close(l->mutex);
  }
}

struct root_lock *lock_root(int node, int fd, const struct stat *st) {
  for (int i = 0; i < nlocks; i++)
    if (locks[i].node == node) return &locks[i];
  if (state_fd < 0) return NULL;
  char name[96];
  struct root_lock *l = &locks[nlocks++];
  l->node = node;
  l->dirfd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (l->dirfd < 0) die("launch: dup: %s", strerror(errno));
  snprintf(l->prefix, sizeof l->prefix, "root-%llx-%llx", (unsigned long long)st->st_dev, (unsigned long long)st->st_ino);
  /* The last run using a root removes its two files (release_roots): a mutex locked meanwhile is used
   * only while it is still the file of that name, or taken again. */
  lock_mutex(l);
  snprintf(name, sizeof name, "%s.users", l->prefix);
  l->users = state_file(name, 0);
  /* Nobody else uses this root: a snapshot left now is a killed run's (guard.c checks against it first). */
  if (flock(l->users, LOCK_EX | LOCK_NB) == 0) l->fresh = 1;
  if (flock(l->users, LOCK_SH) < 0) die("launch: flock: %s", strerror(errno));
  return l; /* the mutex stays held until every path below this root is open */
}

void guard_root(struct root_lock *l, const char *path, const struct stat *st, const char *rel) {
  if (l->guard == NULL) l->guard = guard_new(l->dirfd, path, st->st_dev, st->st_ino);
  guard_path(l->guard, rel);
}

void prepare_guards(FILE *report) {
  for (int k = 0; k < nlocks; k++)
    if (locks[k].guard != NULL) {
      guard_prepare(locks[k].guard, state_fd, locks[k].fresh, report);
      /* The guard answers for what its snapshot holds whole; the check after the run looks at the rest. */
      guard_each_whole(locks[k].guard, check_exempt);
    }
}

void unlock_roots_mutex(void) {
  for (int i = 0; i < nlocks; i++) flock(locks[i].mutex, LOCK_UN);
}

void release_roots(FILE *report) {
  for (int i = 0; i < nlocks; i++) {
    struct root_lock *l = &locks[i];
    flock(l->mutex, LOCK_EX);
    if (l->guard != NULL) guard_check(l->guard, report);
    if (flock(l->users, LOCK_EX | LOCK_NB) == 0) {
      char name[96];
      if (l->guard != NULL) guard_discard(l->guard, state_fd);
      /* No other run uses the root: its files go (a run waiting on the mutex sees it is no longer the file
       * of that name and makes new ones). */
      const char *suffix[] = {".users", ".mutex"};
      for (int k = 0; k < 2; k++) {
        snprintf(name, sizeof name, "%s%s", l->prefix, suffix[k]);
        unlinkat(state_fd, name, 0);
      }
    }
    flock(l->users, LOCK_UN);
    flock(l->mutex, LOCK_UN);
  }
}
