/* A trapped call a read-only mount refuses (refused.h). */
#define _GNU_SOURCE
#include "refused.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <linux/seccomp.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

/* PATH beneath the process's root ROOT, links followed inside it only; -1 when it cannot be opened. */
static int open_in_root(int root, const char *path, int flags) {
  struct open_how how = {.flags = (__u64)(O_PATH | O_CLOEXEC | flags), .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS};
  return (int)syscall(SYS_openat2, root, path[0] == '\0' ? "/" : path, &how, sizeof how);
}

/* Whether descriptor FD (of an existing object or the directory an entry is made in) refuses writes. */
static int read_only(int fd) {
  struct stat st;
  struct statvfs vfs;
  if (fstat(fd, &st) < 0 || fstatvfs(fd, &vfs) < 0) return 0;
  if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) || S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode)) return 0;
  return (vfs.f_flag & ST_RDONLY) != 0;
}

int write_refused(pid_t pid, __u64 id, int listener, const char *abs, int follows) {
  char link[64], parent[4096];
  snprintf(link, sizeof link, "/proc/%d/root", (int)pid);
  int root = open(link, O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (root < 0) return 0;
  /* The root is the caller's only while its call is pending (not a new process of that pid). */
  if (ioctl(listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &id) < 0) {
    close(root);
    return 0;
  }
  /* An existing object the call reaches: its own mount decides (a file bind-mounted read-only; a link the
   * call does not follow lies on its directory's mount). */
  int fd = open_in_root(root, abs, follows ? 0 : O_NOFOLLOW);
  if (fd >= 0) {
    int refused = read_only(fd);
    close(fd);
    close(root);
    return refused;
  }
  /* A new entry (or a symlink not followed): the directory it is made in decides. */
  const char *slash = strrchr(abs, '/');
  size_t n = slash == NULL ? 0 : (size_t)(slash - abs);
  if (slash == NULL || n >= sizeof parent) {
    close(root);
    return 0;
  }
  memcpy(parent, abs, n);
  parent[n] = '\0';
  int dir = open_in_root(root, parent, O_DIRECTORY);
  close(root);
  if (dir < 0) return 0; /* no such directory: the call fails with ENOENT, no refusal of ours */
  int refused = read_only(dir);
  close(dir);
  return refused;
}
