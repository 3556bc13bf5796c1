/*
 * The writable roots' locks (roots.h). Per root, under --state: `stubs-DEV-INO.mutex`, held while a run
 * opens and makes stubs below the root (and at its end); `.users`, held shared by every run using the
 * root, so one that gets it exclusively knows it is alone; `.list`, the stub record (stubs.c).
 */
#define _GNU_SOURCE
#include "roots.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "../after-run/guard.h"
#include "../common/errors.h"
#include "state.h"
#include "stubs.h"

#define MAX_ROOTS 128 /* as many as the launcher opens paths */

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
  snprintf(l->prefix, sizeof l->prefix, "stubs-%llx-%llx", (unsigned long long)st->st_dev, (unsigned long long)st->st_ino);
  /* The last run using a root removes its three files (release_roots): a mutex locked meanwhile is used
   * only while it is still the file of that name, or taken again. */
  lock_mutex(l);
  snprintf(name, sizeof name, "%s.users", l->prefix);
  l->users = state_file(name, 0);
  snprintf(name, sizeof name, "%s.list", l->prefix);
  l->record = state_file(name, O_APPEND);
  if (flock(l->users, LOCK_EX | LOCK_NB) == 0) {
    /* Nobody else uses this root: what the record lists was left by a run that was killed. */
    remove_recorded(state_fd, l->dirfd, l->record);
    l->fresh = 1;
  }
  if (flock(l->users, LOCK_SH) < 0) die("launch: flock: %s", strerror(errno));
  return l; /* the mutex stays held until every path below this root is open */
}

void guard_root(struct root_lock *l, const char *path, const struct stat *st, const char *rel) {
  if (l->guard == NULL) l->guard = guard_new(l->dirfd, path, st->st_dev, st->st_ino);
  guard_path(l->guard, rel);
}

void prepare_guards(FILE *report) {
  for (int k = 0; k < nlocks; k++)
    if (locks[k].guard != NULL) guard_prepare(locks[k].guard, state_fd, locks[k].fresh, report);
}

void unlock_roots_mutex(void) {
  for (int i = 0; i < nlocks; i++) flock(locks[i].mutex, LOCK_UN);
}

int recorded_stubs(struct sweep_skip *skip, int max) {
  struct recorded *items = calloc((size_t)max, sizeof *items);
  int nskip = 0;
  for (int k = 0; items != NULL && k < nlocks && nskip < max; k++) {
    int n = read_record(locks[k].record, items, max - nskip);
    for (int j = 0; j < n; j++) {
      skip[nskip].dev = (dev_t)items[j].dev;
      skip[nskip++].ino = (ino_t)items[j].ino;
    }
  }
  free(items);
  return nskip;
}

void release_roots(FILE *report) {
  for (int i = 0; i < nlocks; i++) {
    struct root_lock *l = &locks[i];
    flock(l->mutex, LOCK_EX);
    if (l->guard != NULL) guard_check(l->guard, report);
    if (flock(l->users, LOCK_EX | LOCK_NB) == 0) {
      remove_recorded(state_fd, l->dirfd, l->record);
      char name[96];
      if (l->guard != NULL) guard_discard(l->guard, state_fd);
      /* No other run uses the root and its record is empty: its files go (a run waiting on the mutex
       * sees it is no longer the file of that name and makes new ones). */
      const char *suffix[] = {".list", ".users", ".mutex"};
      for (int k = 0; k < 3; k++) {
        snprintf(name, sizeof name, "%s%s", l->prefix, suffix[k]);
        unlinkat(state_fd, name, 0);
      }
    }
    flock(l->users, LOCK_UN);
    flock(l->mutex, LOCK_UN);
  }
}
