/*
 * Tier 2's mounts from the descriptors the launcher checked (stage.h).
 *
 * bwrap makes its own mount namespace, and a bind mount from a descriptor of another namespace's mount
 * fails (EINVAL), so bwrap's --bind-fd mounts the path the descriptor has now, then compares inodes: a swap
 * fails closed, but the mount is made by name. A detached clone (open_tree) made in the host's namespace
 * needs CAP_SYS_ADMIN there, and one made in a user namespace cannot be attached by a process of a user
 * namespace below it (EPERM: bwrap's). So PROGRAM's child, before it executes bwrap:
 *   1. makes a mount namespace, a copy of the host's, whose mounts no other process shares (slave: nothing
 *      mounted in it reaches the host's), with a user namespace where bwrap makes one of its own anyway
 *      (this uid and gid mapped to themselves: bwrap runs as before, one level down);
 *   2. opens each node again there, as the launcher did (the root by its path, each node below beneath its
 *      parent, RESOLVE_NO_SYMLINKS), and requires the inode the launcher opened: a swap since then is a
 *      set-up failure, reported on the helper's status channel;
 *   3. clones that descriptor (open_tree, with the mounts below it) and attaches the clone on an entry of
 *      a tmpfs of its own, mounted on STATE/stage (an empty directory of the launcher's state, so no
 *      sandbox ever names it); a node holding STATE is cloned before that tmpfs is mounted, so no clone
 *      takes in the tmpfs and the clones already on it;
 *   4. gives bwrap `--bind STATE/stage/K DEST` (`--ro-bind`) for `--bind-fd FD DEST`, and closes FD at the
 *      exec: bwrap mounts the clone of what was checked, and no path a command can reach is resolved.
 * Where the kernel or a container's seccomp refuses a step (ENOSYS, EPERM, EINVAL) the arguments stay
 * `--bind-fd`: mounted by path and failing closed, as before.
 */
#define _GNU_SOURCE
#include "stage.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/mount.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../common/errors.h"
#include "../common/paths.h"
#include "nodes.h"
#include "setup-status.h"
#include "state.h"

#define STAGE_DIR "stage"

static struct {
  int arg;  /* PROGRAM's argument of the descriptor (the option is the one before it) */
  int node;
} binds[MAX_NODES];
static int nbinds;
static unsigned char other_use[MAX_NODES]; /* a node's descriptor is named by an argument other than a bind */

void stage_note(char **prog, int i, int k) {
  int bind = i > 0 && (strcmp(prog[i - 1], "--bind-fd") == 0 || strcmp(prog[i - 1], "--ro-bind-fd") == 0);
  if (!bind || nbinds >= MAX_NODES) {
    other_use[k] = 1;
    return;
  }
  binds[nbinds].arg = i;
  binds[nbinds].node = k;
  nbinds++;
}

int stage_planned(void) {
  if (nbinds == 0 || state_fd < 0 || state_path == NULL) return 0;
  if (mkdirat(state_fd, STAGE_DIR, 0700) < 0 && errno != EEXIST) return 0;
  struct stat st;
  return fstatat(state_fd, STAGE_DIR, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
}

/* A step the kernel or a seccomp filter refuses: the by-path mounts stay. */
static int refused(int e) { return e == ENOSYS || e == EPERM || e == EINVAL || e == EACCES; }

static int write_self(const char *file, const char *text) {
  char path[64];
  snprintf(path, sizeof path, "/proc/self/%s", file);
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  size_t n = strlen(text);
  int ok = fd >= 0 && write(fd, text, n) == (ssize_t)n;
  if (fd >= 0) close(fd);
  return ok ? 0 : -1;
}

/* Whether PROG makes a user namespace of its own (bwrap's --unshare-user: tier 2). */
static int own_userns(char **prog) {
  for (int i = 0; prog[i] != NULL; i++)
    if (strcmp(prog[i], "--unshare-user") == 0) return 1;
  return 0;
}

/* Step 1: a mount namespace, and a user namespace when PROG makes one of its own anyway (where it makes
 * none, on a root host, PROGRAM stays in the host's: the helper makes /dev's nodes there). 0 when refused
 * (nothing changed), 1 when in; dies when half-way. */
static int enter_namespaces(char **prog) {
  uid_t uid = getuid();
  gid_t gid = getgid();
  int userns = own_userns(prog);
  /* The fork server is not dumpable (spawner.c), so /proc/self's files are root's and the maps below
   * could not be written: dumpable for those three writes, as bwrap is anyway once executed. */
  if (userns) prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
  if (unshare(CLONE_NEWNS | (userns ? CLONE_NEWUSER : 0)) < 0) return 0;
  char uid_map[64], gid_map[64];
  snprintf(uid_map, sizeof uid_map, "%u %u 1\n", (unsigned)uid, (unsigned)uid);
  snprintf(gid_map, sizeof gid_map, "%u %u 1\n", (unsigned)gid, (unsigned)gid);
  if (userns && write_self("setgroups", "deny") < 0 && errno != ENOENT)
    die("launch: stage: setgroups: %s", strerror(errno));
  if (userns && (write_self("uid_map", uid_map) < 0 || write_self("gid_map", gid_map) < 0))
    die("launch: stage: mapping uid %u and gid %u: %s", (unsigned)uid, (unsigned)gid, strerror(errno));
  if (userns) prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  /* Before anything is mounted here: nothing of this namespace's reaches the host's. */
  if (mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) < 0) die("launch: stage: mount propagation: %s", strerror(errno));
  return 1;
}

/* Step 3's tmpfs on STATE/stage; its root's descriptor, or -1 when refused. */
static int stage_tmpfs(void) {
  char path[4200];
  if (snprintf(path, sizeof path, "%s/" STAGE_DIR, state_path) >= (int)sizeof path) return -1;
  int dir = open_path_nolink(AT_FDCWD, path, RESOLVE_NO_SYMLINKS);
  if (dir < 0) die("launch: stage: cannot open %s: %s", path, open_path_why(errno));
  int fs = (int)syscall(SYS_fsopen, "tmpfs", FSOPEN_CLOEXEC);
  int ok = fs >= 0 && syscall(SYS_fsconfig, fs, FSCONFIG_SET_STRING, "mode", "0700", 0) == 0 &&
           syscall(SYS_fsconfig, fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) == 0;
  int m = ok ? (int)syscall(SYS_fsmount, fs, FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC) : -1;
  int e = errno;
  if (fs >= 0) close(fs);
  if (m >= 0 && syscall(SYS_move_mount, m, "", dir, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0) {
    e = errno;
    close(m);
    m = -1;
  }
  close(dir);
  if (m < 0 && !refused(e)) die("launch: stage: a tmpfs on %s: %s", path, strerror(e));
  return m;
}

/* Step 2: node K opened again in this namespace (its parent's descriptor in AGAIN), the same inode. */
static int open_again(int k, const int *again) {
  const struct node *n = &nodes[k];
  int fd;
  if (n->parent < 0) {
    fd = open_path(AT_FDCWD, n->path, RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
  } else {
    const char *last = n->rel + strlen(nodes[n->parent].rel) + (nodes[n->parent].rel[0] != '\0');
    fd = open_path_nolink(again[n->parent], last, RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
  }
  const char *shown = n->parent < 0 ? n->path : n->rel;
  struct stat st;
  if (fd < 0 || fstat(fd, &st) < 0)
    die("launch: %s changed while the sandbox was being set up (not there again after its check: %s; another "
        "command may have moved it); run again",
        shown, open_path_why(errno));
  if (st.st_dev != n->st.st_dev || st.st_ino != n->st.st_ino)
    die("launch: %s changed while the sandbox was being set up (swapped between its check and its mount: "
        "another command may have moved it); run again",
        shown);
  return fd;
}

/* Step 3's clone of AGAIN, node N's descriptor opened again (with the mounts below it); -1 when refused. */
static int clone_of(int again, const struct node *n) {
  int c = (int)syscall(SYS_open_tree, again, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH | AT_RECURSIVE);
  if (c < 0 && !refused(errno)) die("launch: stage: cannot clone the mount of %s: %s", n->name, strerror(errno));
  return c;
}

/* Step 3 for bind B: its clone C attached on entry B of the tmpfs TMP (C is closed); 0, or -1 when refused. */
static int attach_clone(int tmp, int b, int c) {
  char name[16];
  snprintf(name, sizeof name, "%d", b);
  const struct node *n = &nodes[binds[b].node];
  int made = S_ISDIR(n->st.st_mode) ? mkdirat(tmp, name, 0700) : openat(tmp, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (made < 0) die("launch: stage: %s: %s", name, strerror(errno));
  if (!S_ISDIR(n->st.st_mode)) close(made);
  int moved = (int)syscall(SYS_move_mount, c, "", tmp, name, MOVE_MOUNT_F_EMPTY_PATH);
  int e = errno;
  close(c);
  if (moved < 0 && !refused(e)) die("launch: stage: cannot attach the mount of %s: %s", n->name, strerror(e));
  return moved < 0 ? -1 : 0;
}

/* Whether node K holds the state directory: its clone, made once the tmpfs is on STATE/stage, would take in
 * the tmpfs and every clone already on it (a tree doubling with each such node). Paths as the launcher
 * opened them: no symlink on the way. */
static int holds_state(int k) {
  int r = k;
  while (nodes[r].parent >= 0) r = nodes[r].parent;
  if (nodes[r].path == NULL) return 1; /* not known: cloned first, which is always right */
  char full[4096 + sizeof nodes[k].rel + 2];
  int n = snprintf(full, sizeof full, "%s%s%s", nodes[r].path, nodes[k].rel[0] != '\0' ? "/" : "", nodes[k].rel);
  if (n < 0 || n >= (int)sizeof full) return 1;
  size_t len = (size_t)n;
  while (len > 0 && full[len - 1] == '/') len--;
  return strncmp(state_path, full, len) == 0 && (state_path[len] == '/' || state_path[len] == '\0');
}

/* Step 2 for bind B: each node on the way to it opened again, in order (a parent before its children). */
static int open_chain(int b, int *again) {
  int chain[MAX_NODES], depth = 0;
  for (int k = binds[b].node; k >= 0 && again[k] < 0; k = nodes[k].parent) chain[depth++] = k;
  while (depth > 0) {
    int k = chain[--depth];
    again[k] = open_again(k, again);
  }
  return again[binds[b].node];
}

/* Step 4: the bind arguments name the staged clones, and the nodes' own descriptors close at the exec. */
static void rewrite(char **prog) {
  for (int b = 0; b < nbinds; b++) {
    int i = binds[b].arg, k = binds[b].node;
    char *path;
    if (asprintf(&path, "%s/" STAGE_DIR "/%d", state_path, b) < 0) die("out of memory");
    prog[i - 1] = strcmp(prog[i - 1], "--ro-bind-fd") == 0 ? "--ro-bind" : "--bind";
    prog[i] = path;
    if (!other_use[k]) fcntl(nodes[k].fd, F_SETFD, FD_CLOEXEC);
  }
}

void stage_mounts(char **prog) {
  status_channel(setup_status_fd()); /* a failure here is the set-up's, told where the host believes it */
  if (!enter_namespaces(prog)) return;
  int again[MAX_NODES], clones[MAX_NODES];
  for (int k = 0; k < nnodes; k++) again[k] = -1;
  for (int b = 0; b < nbinds; b++) clones[b] = -1;
  /* The nodes holding the state directory are cloned before the tmpfs is there. */
  int ok = 1;
  for (int b = 0; ok && b < nbinds; b++)
    if (holds_state(binds[b].node)) ok = (clones[b] = clone_of(open_chain(b, again), &nodes[binds[b].node])) >= 0;
  int tmp = ok ? stage_tmpfs() : -1;
  ok = tmp >= 0;
  for (int b = 0; ok && b < nbinds; b++) {
    if (clones[b] < 0) clones[b] = clone_of(open_chain(b, again), &nodes[binds[b].node]);
    ok = clones[b] >= 0 && attach_clone(tmp, b, clones[b]) == 0;
    clones[b] = -1;
  }
  for (int b = 0; b < nbinds; b++)
    if (clones[b] >= 0) close(clones[b]);
  for (int k = 0; k < nnodes; k++)
    if (again[k] >= 0) close(again[k]);
  if (tmp >= 0) close(tmp);
  if (ok) rewrite(prog);
}
