/*
 * Where a trapped call's path is, seen from inside the sandbox: read from the caller's memory
 * (/proc/PID/mem), joined to its cwd or directory descriptor (/proc/PID/cwd, /proc/PID/fd/N), made
 * absolute and lexically normal. The writable roots are mounted at their own host paths, so that path
 * names the root and the path below it.
 */
#ifndef ALEPH_CHANGES_RESOLVE_H
#define ALEPH_CHANGES_RESOLVE_H

#include <stddef.h>
#include <sys/types.h>

/* The NUL-terminated string at ADDR in process PID's memory (MEM: its /proc/PID/mem, open) into BUF; -1
 * when unreadable or longer than SIZE. */
int read_string(int mem, unsigned long long addr, char *buf, size_t size);
/* The absolute, normal path of PATH as process PID sees it: relative to DIRFD (AT_FDCWD: its cwd), or
 * the descriptor DIRFD itself when PATH is NULL or empty. -1 when it cannot be known (a deleted cwd). */
int sandbox_path(pid_t pid, int dirfd, const char *path, char *out, size_t size);

#endif
