/*
 * Where a trapped call's path is, seen from inside the sandbox: read from the caller's memory
 * (/proc/PID/mem), joined to its cwd or directory descriptor (/proc/PID/cwd, /proc/PID/fd/N), made
 * absolute and normal (lexically, or by the kernel's walk where it has ".."). The writable roots are
 * mounted at their own host paths, so that path names the root and the path below it.
 */
#ifndef ALEPH_CHANGES_RESOLVE_H
#define ALEPH_CHANGES_RESOLVE_H

#include <stddef.h>
#include <sys/types.h>

/* The NUL-terminated string at ADDR in process PID's memory (MEM: its /proc/PID/mem, open) into BUF; -1
 * when unreadable or longer than SIZE. */
int read_string(int mem, unsigned long long addr, char *buf, size_t size);
/* The absolute, normal path of PATH as process PID sees it: relative to DIRFD (AT_FDCWD: its cwd), or
 * the descriptor DIRFD itself when PATH is NULL or empty. A path with "..", or going on past its own
 * /proc/self/cwd, root or fd/N, has its directory part walked as the kernel walks it, beneath
 * /proc/PID/root ("lnk/../x" lies beside where lnk leads; the caller's links are never followed in the
 * host's view). -1 when it cannot be known (a deleted cwd; such a path whose directory cannot be opened
 * from here). */
int sandbox_path(pid_t pid, int dirfd, const char *path, char *out, size_t size);
/* The path ABS (from sandbox_path) names once process PID's symlinks are followed, in its own view: every
 * one but the last (that one too when FOLLOW and it exists), magic links of its own /proc/self, /dev/fd
 * and /dev/std* included (a write through /proc/self/fd/N or a symlink from outside a writable root into
 * it lands there). Resolved beneath /proc/PID/root (RESOLVE_IN_ROOT), never through the host's paths.
 * 1: followed to what is there; 0: its parent resolved, the last component as named; -1 with errno
 * (EXDEV: through a magic link that cannot be followed from here). */
int sandbox_real_path(pid_t pid, const char *abs, int follow, char *out, size_t size);

#endif
