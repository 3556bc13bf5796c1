/*
 * Tier 3's guarded roots: each under two locks in --state (a mutex held while a run takes or shares the
 * root's snapshot and while it checks against it, and a shared "users" lock held for the run), with its
 * guard. The last run using a root removes its snapshot and its files.
 */
#ifndef ALEPH_LAUNCHER_ROOTS_H
#define ALEPH_LAUNCHER_ROOTS_H

#include <stdio.h>
#include <sys/stat.h>

struct root_lock {
  int node;
  int dirfd; /* the root, opened before any clone replaces its descriptor */
  int mutex, users;
  int fresh; /* no other run used the root when this one started */
  char prefix[64]; /* its files under --state: PREFIX.mutex, .users */
  struct guard *guard;
};

/* The lock of the root NODE (its descriptor FD, ST its stat), taken at its first use: NULL without
 * --state. Its mutex stays held until unlock_roots_mutex(). */
struct root_lock *lock_root(int node, int fd, const struct stat *st);
/* Adds REL to the protected paths the guard of L checks (its root at PATH, ST its stat). */
void guard_root(struct root_lock *l, const char *path, const struct stat *st, const char *rel);
/* Every root's guard takes (or shares) its snapshot, under the mutex. */
void prepare_guards(FILE *report);
/* Every root's snapshot is taken: other runs may use them now. */
void unlock_roots_mutex(void);
/* After the run: each root's guard checks; the last run using a root removes its snapshot and files. */
void release_roots(FILE *report);

#endif
