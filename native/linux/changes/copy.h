/*
 * Copying a file's bytes on descriptors, holes kept (SEEK_DATA/SEEK_HOLE, copy_file_range where the
 * filesystem can): the pre-run copies of the change store, and undo putting content back.
 */
#ifndef ALEPH_CHANGES_COPY_H
#define ALEPH_CHANGES_COPY_H

#include "state.h"

/* Copies the bytes of descriptor IN into OUT (truncated to IN's SIZE): 0, or -1 with errno. */
int copy_bytes(int in, int out, long long size);
/* Copies file NAME beneath PFD, which must still be the inode of S (opened O_NOFOLLOW), into a new file
 * BLOB (mode 0600) beneath BLOBS. Its allocated bytes (st_blocks * 512) into *ALLOCATED; over BUDGET the
 * copy is removed. 0, or -1 with *WHY. */
int copy_file(int pfd, const char *name, const struct path_state *s, int blobs, const char *blob, long long budget,
              long long *allocated, const char **why);

#endif
