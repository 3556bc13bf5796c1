/*
 * Opening a path a sandboxed command could have changed (paths.h): openat2 under RESOLVE_* flags, or where
 * the kernel has no openat2, a walk that gives the same answers; and the words for why an open failed.
 */
#define _GNU_SOURCE
#include "paths.h"

#include <errno.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>

/* openat2 answered ENOSYS once: every later open walks. */
static int no_openat2;

/* The component of PATH starting at *AT (skipping slashes) into NAME; 0 at the end, -1 when too long. */
static int next_component(const char **at, char *name, size_t size) {
  const char *p = *at;
  while (*p == '/') p++;
  size_t n = strcspn(p, "/");
  if (n == 0) return 0;
  if (n >= size) return -1;
  memcpy(name, p, n);
  name[n] = '\0';
  *at = p + n;
  return 1;
}

/* One step of the walk: NAME beneath CUR, never through a symlink: a directory unless LAST, and LAST itself
 * opened as what it is (a symlink too, as openat2 with O_PATH|O_NOFOLLOW gives it). */
static int step(int cur, const char *name, int last) {
  int next = openat(cur, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
  if (next < 0) return -1;
  if (last) return next;
  struct stat st;
  int bad = fstat(next, &st) < 0 ? errno : S_ISLNK(st.st_mode) ? ELOOP : !S_ISDIR(st.st_mode) ? ENOTDIR : 0;
  if (bad != 0) {
    close(next);
    errno = bad;
    return -1;
  }
  return next;
}

/* The walk: what openat2 with RESOLVE_NO_SYMLINKS (and RESOLVE_BENEATH) answers, on O_NOFOLLOW opens. */
static int walk(int dirfd, const char *path, uint64_t resolve) {
  if (resolve & ~(uint64_t)(RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_BENEATH) ||
      !(resolve & RESOLVE_NO_SYMLINKS))
    return errno = EINVAL, -1;
  int beneath = (resolve & RESOLVE_BENEATH) != 0;
  if (path[0] == '/' && beneath) return errno = EXDEV, -1;
  int cur = path[0] == '/' ? open("/", O_PATH | O_DIRECTORY | O_CLOEXEC)
                           : openat(dirfd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (cur < 0) return -1;
  const char *at = path;
  char name[NAME_MAX + 1];
  int more;
  while ((more = next_component(&at, name, sizeof name)) > 0) {
    if (strcmp(name, ".") == 0) continue;
    if (strcmp(name, "..") == 0 && beneath) {
      close(cur);
      return errno = EXDEV, -1;
    }
    const char *rest = at;
    while (*rest == '/') rest++;
    int next = step(cur, name, *rest == '\0');
    int e = errno;
    close(cur);
    if (next < 0) return errno = e, -1;
    cur = next;
  }
  if (more < 0) {
    close(cur);
    return errno = ENAMETOOLONG, -1;
  }
  return cur;
}

int open_path(int dirfd, const char *path, uint64_t resolve) {
  if (!no_openat2) {
    struct open_how how = {.flags = O_PATH | O_CLOEXEC | O_NOFOLLOW, .resolve = resolve};
    int fd = (int)syscall(SYS_openat2, dirfd, path, &how, sizeof how);
    if (fd >= 0 || errno != ENOSYS) return fd;
    no_openat2 = 1;
  }
  return walk(dirfd, path, resolve);
}

int open_path_nolink(int dirfd, const char *path, uint64_t resolve) {
  int fd = open_path(dirfd, path, resolve);
  struct stat st;
  if (fd < 0) return -1;
  int e = fstat(fd, &st) < 0 ? errno : S_ISLNK(st.st_mode) ? ELOOP : 0;
  if (e != 0) {
    close(fd);
    return errno = e, -1;
  }
  return fd;
}

const char *open_path_why(int e) {
  if (e == ELOOP) return "it or a directory above it is a symlink, which could be swapped";
  if (e == EXDEV) return "it leads outside its parent";
  return strerror(e);
}
