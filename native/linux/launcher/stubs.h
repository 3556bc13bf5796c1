/*
 * Stubs: a missing protected path below a writable root is made as an empty stub (an empty directory or
 * file, or a file holding ".") so it can be mounted over read-only, and recorded under --state so the last
 * run using the root removes it again.
 */
#ifndef ALEPH_LAUNCHER_STUBS_H
#define ALEPH_LAUNCHER_STUBS_H

#include <sys/stat.h>

#define MAX_RECORDED 512

struct recorded {
  char kind; /* d: directory, f: empty file, c: a file holding "." */
  unsigned long long dev, ino;
  char rel[1024];
};

/* Makes the stub BASE of KIND beneath PARENT_FD (PARENT: its stat), or takes a parked one; SHOWN names it
 * in messages. 0 when made, else -1 with errno (EEXIST: it is there after all). */
int stub_make(int state_fd, int parent_fd, const struct stat *parent, const char *base, char kind,
              const char *shown);
/* As root: gives the stub FD (ST: its stat, updated) the owner of its directory (PARENT). */
void stub_own_like(int fd, struct stat *st, const struct stat *parent);
/* Appends `KIND DEV INO REL` for the stub ST at REL to the root's RECORD; dies when it cannot. */
void stub_record(int record, char kind, const struct stat *st, const char *rel);
/* Reads a root's stub record ("KIND DEV INO REL" lines, oldest first) into ITEMS; returns how many. */
int read_record(int record, struct recorded *items, int max);
/* Removes (or parks under STATE_FD) the stubs RECORD lists below ROOT that are still the empty stubs
 * made, and empties RECORD. */
void remove_recorded(int state_fd, int root, int record);

#endif
