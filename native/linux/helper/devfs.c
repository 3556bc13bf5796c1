/*
 * The sandbox's /dev on a root host (`--dev-at DEST`, mounts.c), made by the helper in place of bwrap's
 * --dev, which binds each device node from the host and re-reads the whole mount table for every one
 * (about half a millisecond a run). The same contents: a tmpfs (mode 0755; devices allowed, nothing
 * else of the host's) holding the character devices null, zero, full, random, urandom and tty (mode
 * 0666, made with mknod: the helper keeps CAP_MKNOD until it empties its bounding set), the stdin,
 * stdout, stderr, fd and core links, a fresh devpts instance at pts (ptmxmode 0666, mode 0620) with ptmx
 * linking into it, and an empty shm directory (the profile mounts its own tmpfs there). The command, an
 * unprivileged uid without capabilities, can create nothing in it.
 */
#define _GNU_SOURCE
#include "devfs.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/mount.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "../common/errors.h"
#include "../common/paths.h"
#include "mount-api.h"

static const struct {
  const char *name;
  unsigned major, minor;
} nodes[] = {{"null", 1, 3}, {"zero", 1, 5}, {"full", 1, 7}, {"random", 1, 8}, {"urandom", 1, 9}, {"tty", 5, 0}};

static const struct {
  const char *name, *target;
} links[] = {{"stdin", "/proc/self/fd/0"}, {"stdout", "/proc/self/fd/1"}, {"stderr", "/proc/self/fd/2"},
             {"fd", "/proc/self/fd"},      {"core", "/proc/kcore"},         {"ptmx", "pts/ptmx"}};

static int devpts(void) {
  int fs = (int)syscall(SYS_fsopen, "devpts", FSOPEN_CLOEXEC);
  if (fs < 0) die("fsopen devpts: %s", strerror(errno));
  if (syscall(SYS_fsconfig, fs, FSCONFIG_SET_STRING, "ptmxmode", "0666", 0) < 0 ||
      syscall(SYS_fsconfig, fs, FSCONFIG_SET_STRING, "mode", "0620", 0) < 0 ||
      syscall(SYS_fsconfig, fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0)
    die("configuring devpts: %s", strerror(errno));
  int m = (int)syscall(SYS_fsmount, fs, FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC);
  if (m < 0) die("fsmount devpts: %s", strerror(errno));
  close(fs);
  return m;
}

void make_dev(int dest_fd, const char *dest) {
  int t = make_tmpfs("0755", "64k", MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC);
  attach(t, dest_fd, dest);
  close(t);
  /* The tmpfs now covers DEST (DEST_FD still names the directory beneath it). */
  int dev = open_path(AT_FDCWD, dest, RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
  if (dev < 0) die("opening %s: %s", dest, strerror(errno));
  mode_t mask = umask(0);
  for (size_t i = 0; i < sizeof nodes / sizeof nodes[0]; i++)
    if (mknodat(dev, nodes[i].name, S_IFCHR | 0666, makedev(nodes[i].major, nodes[i].minor)) < 0)
      die("creating %s/%s: %s", dest, nodes[i].name, strerror(errno));
  for (size_t i = 0; i < sizeof links / sizeof links[0]; i++)
    if (symlinkat(links[i].target, dev, links[i].name) < 0) die("creating %s/%s: %s", dest, links[i].name, strerror(errno));
  if (mkdirat(dev, "shm", 0755) < 0 || mkdirat(dev, "pts", 0755) < 0) die("creating %s/shm or pts: %s", dest, strerror(errno));
  umask(mask);
  int pts = open_path(dev, "pts", RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS);
  if (pts < 0) die("opening %s/pts: %s", dest, strerror(errno));
  int m = devpts();
  attach(m, pts, "/dev/pts");
  close(m);
  close(pts);
  close(dev);
}
