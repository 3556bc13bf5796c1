/* A trapped call's path, as the sandbox sees it (resolve.h). */
#define _GNU_SOURCE
#include "resolve.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

int read_string(int mem, unsigned long long addr, char *buf, size_t size) {
  size_t got = 0;
  while (got < size) {
    /* Up to the end of the page, so an unmapped next page does not fail a short string. */
    size_t page = 4096 - (size_t)((addr + got) % 4096);
    size_t want = page < size - got ? page : size - got;
    ssize_t n = pread(mem, buf + got, want, (off_t)(addr + got));
    if (n <= 0) return -1;
    char *nul = memchr(buf + got, '\0', (size_t)n);
    if (nul != NULL) return 0;
    got += (size_t)n;
  }
  return -1;
}

/* Rewrites absolute PATH in place without ".", ".." or repeated slashes. */
static void normalize(char *path) {
  char *out = path, *p = path;
  while (*p != '\0') {
    while (*p == '/') p++;
    size_t n = strcspn(p, "/");
    if (n == 0) break;
    if (n == 1 && p[0] == '.') {
    } else if (n == 2 && p[0] == '.' && p[1] == '.') {
      while (out > path && *--out != '/') {
      }
    } else {
      *out++ = '/';
      memmove(out, p, n);
      out += n;
    }
    p += n;
  }
  if (out == path) *out++ = '/';
  *out = '\0';
}

int sandbox_path(pid_t pid, int dirfd, const char *path, char *out, size_t size) {
  char link[64], base[4096];
  size_t n = 0;
  if (path == NULL || path[0] != '/') {
    if (dirfd == AT_FDCWD) snprintf(link, sizeof link, "/proc/%d/cwd", (int)pid);
    else snprintf(link, sizeof link, "/proc/%d/fd/%d", (int)pid, dirfd);
    ssize_t r = readlink(link, base, sizeof base - 1);
    if (r <= 0 || base[0] != '/') return -1;
    base[r] = '\0';
    if (r > 10 && strcmp(base + r - 10, " (deleted)") == 0) return -1;
    n = (size_t)r;
  }
  int len = path == NULL || path[0] == '\0' ? snprintf(out, size, "%s", base)
            : path[0] == '/'              ? snprintf(out, size, "%s", path)
                                          : snprintf(out, size, "%.*s/%s", (int)n, base, path);
  if (len < 0 || (size_t)len >= size) return -1;
  normalize(out);
  return 0;
}

/* REL beneath BASE with FLAGS (O_PATH …): in PID's root (scoped), or, in its /proc/PID (magic links). */
static int open_in(int base, const char *rel, int flags, int scoped) {
  if (!scoped) return openat(base, rel[0] == '\0' ? "." : rel, flags | O_CLOEXEC);
  struct open_how how = {.flags = (unsigned long long)(flags | O_CLOEXEC), .resolve = RESOLVE_IN_ROOT};
  return (int)syscall(SYS_openat2, base, rel[0] == '\0' ? "." : rel, &how, sizeof how);
}

/* The path descriptor FD names (in the caller's view: the roots' own paths), or -1. */
static int fd_path(int fd, char *out, size_t size) {
  char link[64];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  ssize_t r = readlink(link, out, size - 1);
  if (r <= 0 || out[0] != '/') return -1;
  out[r] = '\0';
  if (r > 10 && strcmp(out + r - 10, " (deleted)") == 0) return -1;
  return 0;
}

int sandbox_real_path(pid_t pid, const char *abs, int follow, char *out, size_t size) {
  char path[4096], base_path[64];
  /* /dev/fd and /dev/std* are symlinks into /proc/self: followed here as the caller would. */
  static const char *const std[] = {"/dev/stdin", "/dev/stdout", "/dev/stderr"};
  int n = snprintf(path, sizeof path, "%s", abs);
  for (int i = 0; i < 3; i++)
    if (strcmp(abs, std[i]) == 0) n = snprintf(path, sizeof path, "/proc/self/fd/%d", i);
  if (strncmp(abs, "/dev/fd/", 8) == 0) n = snprintf(path, sizeof path, "/proc/self/fd/%s", abs + 8);
  if (n < 0 || (size_t)n >= sizeof path) return errno = ENAMETOOLONG, -1;
  /* Its own /proc/self (the caller's pid is not ours to name in its /proc): the host's /proc/PID. */
  const char *rel = NULL;
  if (strncmp(path, "/proc/self/", 11) == 0) rel = path + 11;
  else if (strncmp(path, "/proc/thread-self/", 18) == 0) rel = path + 18;
  int scoped = rel == NULL;
  snprintf(base_path, sizeof base_path, scoped ? "/proc/%d/root" : "/proc/%d", (int)pid);
  if (scoped) rel = path + 1;
  int base = open(base_path, O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (base < 0) return -1;
  int fd = follow ? open_in(base, rel, O_PATH, scoped) : -1;
  int err = errno;
  if (fd >= 0) {
    close(base);
    int bad = fd_path(fd, out, size);
    close(fd);
    return bad ? (errno = ENOENT, -1) : 1;
  }
  if (follow && err != ENOENT) {
    close(base);
    return errno = err, -1;
  }
  /* The parent resolved, the last component as named (it may not be there yet). */
  char *slash = strrchr(rel, '/');
  const char *name = slash == NULL ? rel : slash + 1;
  if (name[0] == '\0' || strcmp(name, ".") == 0 || strcmp(name, "..") == 0) {
    close(base);
    return errno = EINVAL, -1;
  }
  char parent[4096];
  snprintf(parent, sizeof parent, "%.*s", slash == NULL ? 0 : (int)(slash - rel), rel);
  int pfd = open_in(base, parent, O_PATH | O_DIRECTORY, scoped);
  err = errno;
  close(base);
  if (pfd < 0) return errno = err, -1;
  char dir[4096];
  int bad = fd_path(pfd, dir, sizeof dir);
  close(pfd);
  if (bad) return errno = ENOENT, -1;
  n = snprintf(out, size, "%s/%s", strcmp(dir, "/") == 0 ? "" : dir, name);
  return n < 0 || (size_t)n >= size ? (errno = ENAMETOOLONG, -1) : 0;
}
