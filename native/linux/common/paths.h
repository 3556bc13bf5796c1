/*
 * Opening a path a sandboxed command could have changed: always as an O_PATH descriptor resolved with
 * openat2 under RESOLVE_* flags, never following a last symlink, and saying why such an open failed.
 */
#ifndef ALEPH_COMMON_PATHS_H
#define ALEPH_COMMON_PATHS_H

#include <fcntl.h>
#include <linux/openat2.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

/* An O_PATH descriptor of PATH (beneath DIRFD) resolved under RESOLVE flags, never following a last
 * symlink either: the one way this helper opens a path a command could have changed. */
static inline int open_path(int dirfd, const char *path, uint64_t resolve) {
  struct open_how how = {.flags = O_PATH | O_CLOEXEC | O_NOFOLLOW, .resolve = resolve};
  return (int)syscall(SYS_openat2, dirfd, path, &how, sizeof how);
}

/* Why open_path failed with errno E, in words for a message (a symlink on the way, a path leading out). */
const char *open_path_why(int e);

#endif
