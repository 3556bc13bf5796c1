/* A trapped call's path, as the sandbox sees it (resolve.h). */
#define _GNU_SOURCE
#include "resolve.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
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
