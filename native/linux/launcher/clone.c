/*
 * Detached mounts of the launcher's nodes on a root host (clone.h): open_tree clones, made nosuid and
 * nodev, read-only where asked, and idmapped so the directory's owner appears as the run's uid (idmap.c).
 */
#define _GNU_SOURCE
#include "clone.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/mount.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../common/errors.h"
#include "idmap.h"
#include "nodes.h"

void clone_node(const char *name, const char *mode, long uid) {
  struct node *n = &nodes[find_node(name)];
  if (n->absent) return; /* nothing to mount (its mount is dropped from PROGRAM's arguments) */
  if (n->read_only) mode = "ro";
  int m = (int)syscall(SYS_open_tree, n->fd, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH);
  if (m < 0) die("launch: cannot clone the mount of %s: %s", name, strerror(errno));
  struct mount_attr attr = {.attr_set = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV};
  if (strcmp(mode, "ro") == 0) attr.attr_set |= MOUNT_ATTR_RDONLY;
  int ns = -1;
  if (uid >= 0) {
    ns = idmap_userns(n->st.st_uid, n->st.st_gid, uid);
    attr.attr_set |= MOUNT_ATTR_IDMAP;
    attr.userns_fd = (uint64_t)ns;
  }
  if (syscall(SYS_mount_setattr, m, "", AT_EMPTY_PATH, &attr, sizeof attr) < 0) {
    const char *where = n->path != NULL ? n->path : n->rel[0] ? n->rel : name;
    die("launch: cannot make an idmapped mount of %s: %s (the kernel (before 5.12) or this filesystem does "
        "not support idmapped mounts; options: use a workspace on ext4, xfs, btrfs or tmpfs, run the host "
        "side as a non-root user (commands then run as that user in a user namespace))",
        where, strerror(errno));
  }
  close(n->fd);
  n->fd = m;
  n->cloned = 1;
}
