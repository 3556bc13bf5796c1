/*
 * User-path mounts made inside the sandbox, before the identity drop, from descriptors the host side
 * (`--launch`) opened without following symlinks:
 *   --mnt FD DEST FLAGS     attach the detached mount FD (a root host's idmapped clone) at DEST;
 *   --tmpfs-at DEST MODE FLAGS   a fresh tmpfs at DEST (hides what is beneath);
 *   --mask-at DEST          an empty read-only file over DEST;
 *   --dev-at DEST           a /dev of the sandbox's own at DEST (devfs.c), in place of bwrap's --dev;
 *   --tmpfs-size BYTES      the size of the next --tmpfs-at (default 1 MiB);
 *   --verify FD DEST        DEST must be the directory or file FD names (bwrap mounted it from FD), and the
 *                           root of a mount.
 * FLAGS: 'c' create a missing directory DEST (its parent must be a tmpfs the sandbox made), 'f' the same
 * for a file, 's' DEST must already be the very inode FD names, 'r' (tmpfs) read-only once every
 * operation is done, 'x' (tmpfs) programs may run from it, '-' nothing. DEST is resolved with
 * RESOLVE_NO_SYMLINKS, and the mount is attached to the resolved descriptor, so a path swapped by a command
 * running beside this one cannot redirect it.
 */
#define _GNU_SOURCE
#include "mounts.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <linux/mount.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../common/errors.h"
#include "../common/paths.h"
#include "devfs.h"
#include "mount-api.h"

#define MAX_MOUNT_OPS 1024

struct mount_op {
  char kind; /* m tmpfs-at: t, mask-at: k, verify: v, dev-at: d */
  int fd;
  const char *size; /* tmpfs */
  const char *dest;
  const char *mode;
  const char *flags;
};

static struct mount_op ops[MAX_MOUNT_OPS];
static int nops;
static const char *next_size = "1m";

int mount_ops_count(void) { return nops; }

int mount_op_parse(const char *op, char **argv, int argc, int *i) {
  if (strcmp(op, "--tmpfs-size") == 0) {
    if (*i + 1 >= argc) die("option %s needs a value", op);
    next_size = argv[*i + 1];
    parse_long(next_size, "tmpfs size");
    *i += 1;
    return 1;
  }
  int need = strcmp(op, "--mnt") == 0        ? 3
             : strcmp(op, "--tmpfs-at") == 0 ? 3
             : strcmp(op, "--mask-at") == 0  ? 1
             : strcmp(op, "--dev-at") == 0   ? 1
             : strcmp(op, "--verify") == 0   ? 2
                                             : 0;
  if (need == 0) return 0;
  if (*i + need >= argc) die("option %s needs %d values", op, need);
  if (nops >= MAX_MOUNT_OPS) die("too many mount operations");
  struct mount_op *m = &ops[nops++];
  memset(m, 0, sizeof *m);
  m->fd = -1;
  m->flags = "-";
  char **v = &argv[*i + 1];
  if (op[2] == 'm' && op[3] == 'n') {
    m->kind = 'm';
    m->fd = (int)parse_long(v[0], "descriptor");
    m->dest = v[1];
    m->flags = v[2];
  } else if (op[2] == 't') {
    m->kind = 't';
    m->dest = v[0];
    m->mode = v[1];
    m->flags = v[2];
    m->size = next_size;
    next_size = "1m";
  } else if (op[2] == 'd') {
    m->kind = 'd';
    m->dest = v[0];
  } else if (op[2] == 'm') {
    m->kind = 'k';
    m->dest = v[0];
  } else {
    m->kind = 'v';
    m->fd = (int)parse_long(v[0], "descriptor");
    m->dest = v[1];
  }
  *i += need;
  return 1;
}

/* A host path the launcher opened is gone (another command's check moved it): fail, and say to run again. */
static void vanished(const char *dest) {
  die("%s changed while the sandbox was being set up (another command may have moved it); run again", dest);
}

/* A mount point is never a symlink: a mount on the link would stay with it when it is swapped away. */
static int resolve(const char *path) { return open_path_nolink(AT_FDCWD, path, RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS); }

/* Opens DEST, creating it (and missing directories above it) where the directory it would be made in
 * is a tmpfs of the sandbox's own: nothing is ever created on a host filesystem here. */
static int open_dest(const struct mount_op *m, int create_file) {
  int fd = resolve(m->dest);
  if (fd >= 0 || errno != ENOENT || (strchr(m->flags, 'c') == NULL && strchr(m->flags, 'f') == NULL)) {
    if (fd < 0 && errno == ENOENT) vanished(m->dest);
    if (fd < 0) die("mount point %s: %s", m->dest, errno == ELOOP ? "a symlink is in the way" : strerror(errno));
    return fd;
  }
  char path[4096];
  if (snprintf(path, sizeof path, "%s", m->dest) >= (int)sizeof path || path[0] != '/') die("bad mount point %s", m->dest);
  int pfd = resolve("/");
  if (pfd < 0) die("open /: %s", strerror(errno));
  const uint64_t beneath = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  for (char *p = path + 1; *p != '\0';) {
    char *slash = strchr(p, '/');
    int last = slash == NULL;
    if (!last) *slash = '\0';
    int next = open_path_nolink(pfd, p, beneath);
    if (next < 0 && errno == ENOENT) {
      struct statfs sf;
      if (fstatfs(pfd, &sf) < 0 || sf.f_type != TMPFS_MAGIC)
        die("mount point %s is missing, and %s would be created outside the sandbox's own tmpfs", m->dest, p);
      int made = last && create_file ? openat(pfd, p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644) : mkdirat(pfd, p, 0755);
      if (made < 0) die("creating mount point %s: %s", m->dest, strerror(errno));
      if (last && create_file) close(made);
      next = open_path_nolink(pfd, p, beneath);
    }
    if (next < 0) die("mount point %s: %s", m->dest, errno == ELOOP ? "a symlink is in the way" : strerror(errno));
    close(pfd);
    pfd = next;
    if (last) break;
    p = slash + 1;
  }
  return pfd;
}

static void same_inode(int a, int b, const char *dest) {
  struct stat sa, sb;
  if (fstat(a, &sa) < 0 || fstat(b, &sb) < 0) die("fstat %s: %s", dest, strerror(errno));
  if (sa.st_dev != sb.st_dev || sa.st_ino != sb.st_ino)
    die("%s changed while the sandbox was being set up (another command may have replaced it); run again", dest);
}

/* bwrap binds a descriptor by the path it reads back from it, following symlinks: a swap at that moment
 * can bind another directory, onto a directory above DEST, where the right inode is still found at DEST
 * (below the wrong mount). DEST must be the root of a mount of its own (where the kernel says so). */
static void mount_root(int fd, const char *dest) {
  struct statx sx;
  if (statx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS, &sx) < 0)
    die("statx %s: %s", dest, strerror(errno));
  if ((sx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) != 0 && (sx.stx_attributes & STATX_ATTR_MOUNT_ROOT) == 0)
    die("%s changed while the sandbox was being set up (another command may have swapped it); run again", dest);
}

static void set_readonly(const char *dest) {
  int fd = resolve(dest);
  struct mount_attr attr = {.attr_set = MOUNT_ATTR_RDONLY};
  if (fd < 0 || syscall(SYS_mount_setattr, fd, "", AT_EMPTY_PATH, &attr, sizeof attr) < 0)
    die("making %s read-only: %s", dest, strerror(errno));
  close(fd);
}

void mount_ops_apply(void) {
  for (int i = 0; i < nops; i++) {
    const struct mount_op *m = &ops[i];
    switch (m->kind) {
    case 'v': {
      int d = resolve(m->dest);
      if (d < 0 && errno == ENOENT) vanished(m->dest);
      if (d < 0) die("mount point %s: %s", m->dest, errno == ELOOP ? "a symlink is in the way" : strerror(errno));
      same_inode(m->fd, d, m->dest);
      mount_root(d, m->dest);
      close(d);
      break;
    }
    case 'm': {
      int d = open_dest(m, strchr(m->flags, 'f') != NULL);
      if (strchr(m->flags, 's') != NULL) same_inode(m->fd, d, m->dest);
      attach(m->fd, d, m->dest);
      close(d);
      break;
    }
    case 't': {
      int d = open_dest(m, 0);
      unsigned attrs = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | (strchr(m->flags, 'x') != NULL ? 0 : MOUNT_ATTR_NOEXEC);
      int t = make_tmpfs(m->mode, m->size, attrs);
      attach(t, d, m->dest);
      close(t);
      close(d);
      break;
    }
    case 'd': {
      struct mount_op dir = *m;
      dir.flags = "c";
      int d = open_dest(&dir, 0);
      make_dev(d, m->dest);
      close(d);
      break;
    }
    case 'k': {
      int d = open_dest(m, 1);
      int n = (int)syscall(SYS_open_tree, AT_FDCWD, "/dev/null", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
      /* nodev: the mask cannot even be opened (EACCES), as with bwrap's own binds. */
      struct mount_attr attr = {.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC};
      if (n < 0 || syscall(SYS_mount_setattr, n, "", AT_EMPTY_PATH, &attr, sizeof attr) < 0)
        die("masking %s: %s", m->dest, strerror(errno));
      attach(n, d, m->dest);
      close(n);
      close(d);
      break;
    }
    }
  }
  for (int i = 0; i < nops; i++)
    if (ops[i].kind == 't' && strchr(ops[i].flags, 'r') != NULL) set_readonly(ops[i].dest);
}
