/*
 * `aleph-sandbox-init --probe-idmap PATH…` (idmap-probe.h): for each PATH, what the launcher does to a user
 * path on a root host (launcher/clone.c) short of attaching it: a detached clone of its mount
 * (open_tree), made idmapped (mount_setattr MOUNT_ATTR_IDMAP) through a user namespace that maps the
 * path's owner (common/nschild.c). The clone is never attached and goes away with its descriptor. The
 * answers, in the order of the paths, are one JSON array on stdout: "ok", or the step that failed and its
 * error ("mount_setattr: Invalid argument": this filesystem cannot be idmapped). Each PATH is opened
 * without following a final symlink; a path that cannot be opened says so.
 */
#define _GNU_SOURCE
#include "idmap-probe.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/mount.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../common/nschild.h"

static char stack[16384] __attribute__((aligned(16)));

/* A user namespace mapping OWNER (GROUP) to 65534, or -1 with the failed step in BUF. */
static int owner_userns(uid_t owner, gid_t group, char *buf, size_t len) {
  struct ns_child c;
  if (ns_child_start(&c, CLONE_NEWUSER, NULL, stack, sizeof stack) < 0)
    return snprintf(buf, len, "user namespace: %s", strerror(errno)), -1;
  char path[64], map[64];
  const char *files[3] = {"setgroups", "uid_map", "gid_map"};
  int ns = -1;
  for (int i = 0; i < 3; i++) {
    if (i == 0) snprintf(map, sizeof map, "deny");
    else snprintf(map, sizeof map, "%u 65534 1", i == 1 ? (unsigned)owner : (unsigned)group);
    snprintf(path, sizeof path, "/proc/%d/%s", (int)c.pid, files[i]);
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0 || write(fd, map, strlen(map)) < 0) {
      snprintf(buf, len, "writing %s: %s", files[i], strerror(errno));
      if (fd >= 0) close(fd);
      goto out;
    }
    close(fd);
  }
  snprintf(path, sizeof path, "/proc/%d/ns/user", (int)c.pid);
  ns = open(path, O_RDONLY | O_CLOEXEC);
  if (ns < 0) snprintf(buf, len, "open ns/user: %s", strerror(errno));
out:
  ns_child_release(&c);
  while (waitpid(c.pid, NULL, __WALL) < 0 && errno == EINTR) {
  }
  return ns;
}

/* "ok", or what failed, for one path. */
static const char *try_idmap(const char *p, char *buf, size_t len) {
  int fd = open(p, O_PATH | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return snprintf(buf, len, "open: %s", strerror(errno)), buf;
  struct stat st;
  if (fstat(fd, &st) < 0) {
    snprintf(buf, len, "fstat: %s", strerror(errno));
    close(fd);
    return buf;
  }
  int m = (int)syscall(SYS_open_tree, fd, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH);
  close(fd);
  if (m < 0) return snprintf(buf, len, "open_tree: %s", strerror(errno)), buf;
  int ns = owner_userns(st.st_uid, st.st_gid, buf, len);
  if (ns < 0) {
    close(m);
    return buf;
  }
  struct mount_attr attr = {.attr_set = MOUNT_ATTR_IDMAP, .userns_fd = (uint64_t)ns};
  int r = (int)syscall(SYS_mount_setattr, m, "", AT_EMPTY_PATH, &attr, sizeof attr);
  int e = errno;
  close(ns);
  close(m);
  if (r < 0) return snprintf(buf, len, "mount_setattr: %s", strerror(e)), buf;
  return "ok";
}

int probe_idmap_main(int argc, char **argv) {
  fputc('[', stdout);
  for (int i = 2; i < argc; i++) {
    char buf[256];
    const char *said = try_idmap(argv[i], buf, sizeof buf);
    printf("%s\"%s\"", i > 2 ? "," : "", said);
  }
  fputs("]\n", stdout);
  return 0;
}
