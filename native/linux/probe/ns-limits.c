/*
 * The probe of the namespace limits (ns-limits.h). Each exercise runs in a child of the probe (probe.c's
 * in_child); the namespaces are made by a grandchild, so the child can read the host's value afterwards.
 */
#define _GNU_SOURCE
#include "ns-limits.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../helper/ns-limits.h"

/* The number in PATH, or -1. */
static long read_long(const char *path) {
  char text[32] = {0};
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  ssize_t n = fd < 0 ? -1 : read(fd, text, sizeof text - 1);
  if (fd >= 0) close(fd);
  return n <= 0 ? -1 : strtol(text, NULL, 10);
}

/* In a grandchild made in namespaces FLAGS (and, with a new PID namespace, forked once more to be in it):
 * writes VALUE to PATH and reads it back. Its exit status: 0 ok, 1 no namespaces, 2 no write, 3 read back
 * otherwise. */
static int try_in_namespaces(int flags, const char *path, long value) {
  pid_t c = fork();
  if (c < 0) return -errno;
  if (c == 0) {
    if (unshare(flags) < 0) _exit(1);
    if ((flags & CLONE_NEWPID) != 0) {
      pid_t g = fork(); /* pid 1 of the new PID namespace */
      if (g < 0) _exit(1);
      if (g > 0) {
        int status = 0;
        waitpid(g, &status, 0);
        _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 1);
      }
    }
    char text[32];
    int len = snprintf(text, sizeof text, "%ld\n", value);
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0 || write(fd, text, (size_t)len) != len) _exit(2);
    close(fd);
    _exit(read_long(path) == value ? 0 : 3);
  }
  int status = 0;
  waitpid(c, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 4;
}

/* "ok", or what went wrong, for a try at PATH (the host's value BEFORE). */
static const char *verdict(int r, const char *path, long before, char *buf, size_t len) {
  long after = read_long(path);
  if (after != before)
    return snprintf(buf, len, "the host's %s changed from %ld to %ld: it is not the namespace's own", path, before, after), buf;
  if (r == 0) return "ok";
  if (r < 0) return snprintf(buf, len, "fork: %s", strerror(-r)), buf;
  const char *what[] = {"", "making the namespaces", "writing it in them", "reading it back there", "the child died"};
  return snprintf(buf, len, "%s for %s failed", what[r > 4 ? 4 : r], path), buf;
}

const char *pid_max_exercise(char *buf, size_t len) {
  if (!kernel_at_least(6, 14)) {
    struct utsname u;
    uname(&u);
    return snprintf(buf, len, "Linux %s has one pid_max for the whole host (per PID namespace from 6.14)", u.release), buf;
  }
  const char *path = "/proc/sys/kernel/pid_max";
  long before = read_long(path);
  return verdict(try_in_namespaces(CLONE_NEWUSER | CLONE_NEWPID, path, 301), path, before, buf, len);
}

const char *userns_limits_exercise(char *buf, size_t len) {
  const char *path = "/proc/sys/user/max_inotify_instances";
  long before = read_long(path);
  if (before < 0) return snprintf(buf, len, "%s cannot be read: %s", path, strerror(errno)), buf;
  return verdict(try_in_namespaces(CLONE_NEWUSER, path, 1), path, before, buf, len);
}
