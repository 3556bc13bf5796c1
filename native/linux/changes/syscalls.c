/* The trapped calls' table (syscalls.h), from this architecture's system call numbers. */
#define _GNU_SOURCE
#include "syscalls.h"

#include <stddef.h>
#include <sys/syscall.h>

#ifndef SYS_fchmodat2
#define SYS_fchmodat2 452
#endif
#ifndef SYS_openat2
#define SYS_openat2 437
#endif

const struct trapped_call changes_calls[] = {
#ifdef SYS_open
    {SYS_open, CK_OPEN, -1, 0, -1, -1, 1, 1},
    {SYS_creat, CK_OPEN, -1, 0, -1, -1, -1, 1},
    {SYS_unlink, CK_REMOVE, -1, 0, -1, -1, -1, 0},
    {SYS_rmdir, CK_REMOVE, -1, 0, -1, -1, -1, 0},
    {SYS_rename, CK_RENAME, -1, 0, -1, 1, -1, 0},
    {SYS_link, CK_CREATE, -1, 1, -1, 0, -1, 0},
    {SYS_symlink, CK_CREATE, -1, 1, -1, -1, -1, 0},
    {SYS_mkdir, CK_CREATE, -1, 0, -1, -1, -1, 0},
    {SYS_mknod, CK_CREATE, -1, 0, -1, -1, -1, 0},
    {SYS_chmod, CK_META, -1, 0, -1, -1, -1, 1},
    {SYS_chown, CK_META, -1, 0, -1, -1, -1, 1},
    {SYS_lchown, CK_META, -1, 0, -1, -1, -1, 0},
#endif
#ifdef SYS_utime
    {SYS_utime, CK_META, -1, 0, -1, -1, -1, 1},
    {SYS_utimes, CK_META, -1, 0, -1, -1, -1, 1},
    {SYS_futimesat, CK_META, 0, 1, -1, -1, -1, 1},
#endif
    {SYS_openat, CK_OPEN, 0, 1, -1, -1, 2, 1},
    {SYS_openat2, CK_OPEN, 0, 1, -1, -1, -1, 1},
    {SYS_truncate, CK_META, -1, 0, -1, -1, -1, 1},
    {SYS_unlinkat, CK_REMOVE, 0, 1, -1, -1, -1, 0},
#ifdef SYS_renameat
    {SYS_renameat, CK_RENAME, 0, 1, 2, 3, -1, 0},
#endif
    {SYS_renameat2, CK_RENAME, 0, 1, 2, 3, -1, 0},
    {SYS_linkat, CK_CREATE, 2, 3, 0, 1, -1, 0},
    {SYS_symlinkat, CK_CREATE, 1, 2, -1, -1, -1, 0},
    {SYS_mkdirat, CK_CREATE, 0, 1, -1, -1, -1, 0},
    {SYS_mknodat, CK_CREATE, 0, 1, -1, -1, -1, 0},
    {SYS_fchmod, CK_META, 0, -1, -1, -1, -1, 1},
    {SYS_fchmodat, CK_META, 0, 1, -1, -1, -1, 1},
    {SYS_fchmodat2, CK_META, 0, 1, -1, -1, 3, 1},
    {SYS_fchown, CK_META, 0, -1, -1, -1, -1, 1},
    {SYS_fchownat, CK_META, 0, 1, -1, -1, 4, 1},
    /* A null path sets the times of the descriptor itself (futimens): supervise.c. */
    {SYS_utimensat, CK_META, 0, 1, -1, -1, 3, 1},
};
const int changes_ncalls = sizeof changes_calls / sizeof changes_calls[0];

const struct trapped_call *changes_call(int nr) {
  for (int i = 0; i < changes_ncalls; i++)
    if (changes_calls[i].nr == nr) return &changes_calls[i];
  return NULL;
}
