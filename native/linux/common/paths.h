/*
 * Opening a path a sandboxed command could have changed: always as an O_PATH descriptor resolved with
 * openat2 under RESOLVE_* flags (or, without openat2, by an O_NOFOLLOW walk with the same answers), never
 * following a last symlink, and saying why such an open failed.
 */
#ifndef ALEPH_COMMON_PATHS_H
#define ALEPH_COMMON_PATHS_H

#include <fcntl.h>
#include <linux/openat2.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

/* An O_PATH descriptor of PATH (beneath DIRFD) resolved under RESOLVE flags, never following a last
 * symlink either: the one way this helper opens a path a command could have changed. Where openat2 is
 * ENOSYS (gVisor, kernels before 5.6) the same answer comes from a walk, one component at a time, each
 * opened O_PATH|O_NOFOLLOW beneath the last: a symlink on the way is ELOOP (a last one is opened itself,
 * as openat2 does), and with RESOLVE_BENEATH an absolute path or ".." is EXDEV (openat2 allows a ".." that
 * stays beneath: the walk refuses more, never less). Only RESOLVE_NO_SYMLINKS, RESOLVE_NO_MAGICLINKS (implied by the former)
 * and RESOLVE_BENEATH are used here; the walk refuses any other flag with EINVAL. */
int open_path(int dirfd, const char *path, uint64_t resolve);

/* As open_path, but a last component that is a symlink is ELOOP too: for what is then mounted, bound or
 * treated as a directory or file (an O_PATH descriptor of a symlink names the link, not what a check of
 * the path at another moment finds there). */
int open_path_nolink(int dirfd, const char *path, uint64_t resolve);

/* Why open_path failed with errno E, in words for a message (a symlink on the way, a path leading out). */
const char *open_path_why(int e);

#endif
