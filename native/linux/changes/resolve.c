/* A trapped call's path, as the sandbox sees it (resolve.h). */
#define _GNU_SOURCE
#include "resolve.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
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

/* Whether absolute PATH has a ".." component (lexically dropping it and the one before is wrong after a
 * symlink: "lnk/../x" is beside lnk's target, not beside lnk). */
static int has_dotdot(const char *path) {
  for (const char *p = path; (p = strstr(p, "..")) != NULL; p += 2)
    if (p[-1] == '/' && (p[2] == '/' || p[2] == '\0')) return 1;
  return 0;
}

static int fd_path(int fd, char *out, size_t size);

/* Whether absolute PATH starts at a magic link of the caller PID's own: its /proc/self (or thread-self)
 * cwd, root or fd/N, or /dev/fd/N. LINK gets the host's name of that link ("" for its root: "/"), *TAIL
 * what follows it in PATH. 0 when PATH starts at none; -1 for /dev/fd/ or fd/ with no descriptor number. */
static int magic_prefix(pid_t pid, const char *path, char *link, size_t cap, const char **tail) {
  static const char *const fds[] = {"/dev/fd/", "/proc/self/fd/", "/proc/thread-self/fd/"};
  static const char *const selves[] = {"/proc/self/", "/proc/thread-self/"};
  for (int i = 0; i < 3; i++) {
    size_t k = strlen(fds[i]);
    if (strncmp(path, fds[i], k) != 0) continue;
    char *end;
    long num = strtol(path + k, &end, 10);
    if (end == path + k || (*end != '/' && *end != '\0') || num < 0) return -1;
    snprintf(link, cap, "/proc/%d/fd/%ld", (int)pid, num);
    *tail = end;
    return 1;
  }
  for (int i = 0; i < 2; i++) {
    size_t k = strlen(selves[i]);
    if (strncmp(path, selves[i], k) != 0) continue;
    const char *c = path + k;
    if (strncmp(c, "cwd", 3) == 0 && (c[3] == '/' || c[3] == '\0')) {
      snprintf(link, cap, "/proc/%d/cwd", (int)pid);
      *tail = c + 3;
      return 1;
    }
    if (strncmp(c, "root", 4) == 0 && (c[4] == '/' || c[4] == '\0')) {
      link[0] = '\0';
      *tail = c + 4;
      return 1;
    }
  }
  return 0;
}

/* Whether absolute PATH goes on past a magic link of the caller's ("/proc/self/cwd/x", not a bare
 * "/proc/self/fd/3"): what follows is the caller's to walk, in its root, never the host's. */
static int past_magic(pid_t pid, const char *path) {
  char link[64];
  const char *tail = path;
  int m = magic_prefix(pid, path, link, sizeof link, &tail);
  return m != 0 && (m < 0 || (tail[0] == '/' && tail[1] != '\0'));
}

/* PATH (absolute, with ".." or past a magic link; rewritten in place, SIZE bytes) as the kernel walks it
 * for process PID: its own /proc/self/cwd, /proc/self/root and /proc/self/fd/N (and /dev/fd/N) read as
 * the paths they name, its directory part then resolved beneath /proc/PID/root (RESOLVE_IN_ROOT: the
 * caller's symlinks, never the host's), the last component appended and the result made normal. -1 when
 * that directory cannot be opened from here (not there, or through a magic link or a /proc/self that is
 * not ours to follow, or a descriptor that is no path): the place is unknown (the lexical answer could
 * name a path beside where the call lands). */
static int kernel_path(pid_t pid, char *path, size_t size) {
  char rest[4096], dir[4096], link[64];
  const char *tail = path;
  link[0] = '\0';
  if (magic_prefix(pid, path, link, sizeof link, &tail) < 0) return -1;
  int n = 0;
  if (link[0] != '\0') {
    ssize_t r = readlink(link, rest, sizeof rest - 1);
    if (r <= 0 || rest[0] != '/') return -1;
    rest[r] = '\0';
    if (r > 10 && strcmp(rest + r - 10, " (deleted)") == 0) return -1;
    n = (int)r;
  }
  int len = snprintf(rest + n, sizeof rest - (size_t)n, "%s", tail);
  if (len < 0 || (size_t)(n + len) >= sizeof rest) return -1;
  /* The directory the last component is made in (the whole path when it ends in "." or ".."). */
  char *slash = strrchr(rest, '/');
  const char *name = slash + 1;
  if (strcmp(name, "..") == 0 || strcmp(name, ".") == 0) name = "";
  if (name[0] == '\0') snprintf(dir, sizeof dir, "%s", rest);
  else snprintf(dir, sizeof dir, "%.*s", (int)(slash - rest), rest);
  snprintf(link, sizeof link, "/proc/%d/root", (int)pid);
  int root = open(link, O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (root < 0) return -1;
  struct open_how how = {.flags = O_PATH | O_DIRECTORY | O_CLOEXEC, .resolve = RESOLVE_IN_ROOT};
  int d = (int)syscall(SYS_openat2, root, dir[0] == '\0' ? "/" : dir, &how, sizeof how);
  int err = errno;
  close(root);
  if (d < 0) return errno = err, -1;
  int bad = fd_path(d, dir, sizeof dir);
  close(d);
  if (bad) return -1;
  len = snprintf(path, size, "%s/%s", dir, name);
  if (len < 0 || (size_t)len >= size) return -1;
  normalize(path);
  return 0;
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
  if (has_dotdot(out) || past_magic(pid, out)) return kernel_path(pid, out, size);
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
