/*
 * Parked stubs, for the launcher's stubs (stubs.c, park.h).
 *
 * A missing protected path gets an empty stub for the run (an empty directory, an empty file, or a file
 * holding ".\n"), removed again afterwards. Creating and removing an inode is the slow part of that on
 * ext4 (about 150 µs a pair, measured; a run needs a dozen), while a rename is not. So a stub that is
 * no longer needed is renamed into a private directory under --state instead of being removed, and the
 * next run that needs a stub of that kind and name renames it back out: one `park-DEV-UID-GID` directory
 * per filesystem and owner, holding at most one stub per kind and name (`d.aleph`, `ccommondir`, …).
 *
 * A rename works only within one mount; where the workspace is on another mount (EXDEV), or the slot is
 * taken or empty, the stub is created or removed as before. A stub is parked only when it is still empty,
 * and checked to be empty again when it is taken out (a process of the host user may have written into
 * a stub meanwhile: such a stub is set aside, never reused).
 */
#define _GNU_SOURCE
#include "park.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static int park_fds[8];
static struct stat park_keys[8];
static int nparks;

/* The park directory for stubs owned like PARENT (on PARENT's filesystem), or -1. */
static int park_for(int state_fd, const struct stat *parent) {
  for (int i = 0; i < nparks; i++)
    if (park_keys[i].st_dev == parent->st_dev && park_keys[i].st_uid == parent->st_uid &&
        park_keys[i].st_gid == parent->st_gid)
      return park_fds[i];
  struct stat state;
  /* A rename never crosses filesystems: no park for a workspace on another one than the state's. */
  if (state_fd < 0 || nparks >= 8 || fstat(state_fd, &state) < 0 || state.st_dev != parent->st_dev) return -1;
  char name[96];
  snprintf(name, sizeof name, "park-%llx-%u-%u", (unsigned long long)parent->st_dev, (unsigned)parent->st_uid,
           (unsigned)parent->st_gid);
  if (mkdirat(state_fd, name, 0700) < 0 && errno != EEXIST) return -1;
  int fd = openat(state_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return -1;
  park_keys[nparks] = *parent;
  park_fds[nparks++] = fd;
  return fd;
}

/* Whether BASE in DIRFD is an unmodified stub of KIND ('d', 'f' or 'c') with the inode of ST (when set). */
static int pristine(int dirfd, const char *base, char kind, const struct stat *st) {
  int fd = openat(dirfd, base, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | (kind == 'd' ? O_DIRECTORY : 0));
  if (fd < 0) return 0;
  struct stat now;
  int ok = fstat(fd, &now) == 0 && (st == NULL || (now.st_dev == st->st_dev && now.st_ino == st->st_ino));
  if (ok && kind == 'd') {
    ok = S_ISDIR(now.st_mode);
    /* One read holds "." and ".." and more: anything else in it, or a read that fails, is not empty. */
    char buf[1024];
    long n = ok ? syscall(SYS_getdents64, fd, buf, sizeof buf) : 0;
    if (n <= 0) ok = 0;
    for (long off = 0; ok && off < n;) {
      struct dirent64 *e = (struct dirent64 *)(buf + off);
      if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) ok = 0;
      off += e->d_reclen;
    }
  } else if (ok) {
    char buf[3];
    long want = kind == 'c' ? 2 : 0;
    ok = S_ISREG(now.st_mode) && now.st_size == want && now.st_nlink == 1 &&
         read(fd, buf, sizeof buf) == want && (want == 0 || memcmp(buf, ".\n", 2) == 0);
  }
  close(fd);
  return ok;
}

static void slot_name(char *out, size_t size, char kind, const char *base) {
  snprintf(out, size, "%c%s", kind, base);
}

int park_take(int state_fd, int parent_fd, const struct stat *parent, const char *base, char kind) {
  int park = park_for(state_fd, parent);
  if (park < 0) return -1;
  char slot[300];
  slot_name(slot, sizeof slot, kind, base);
  if (renameat2(park, slot, parent_fd, base, RENAME_NOREPLACE) < 0) return -1;
  if (pristine(parent_fd, base, kind, NULL)) return 0;
  /* Written into while parked or moved: set it aside in the park, never to be used again. */
  struct stat st;
  char aside[64];
  if (fstatat(parent_fd, base, &st, AT_SYMLINK_NOFOLLOW) == 0) {
    snprintf(aside, sizeof aside, "spoiled-%llx", (unsigned long long)st.st_ino);
    renameat2(parent_fd, base, park, aside, RENAME_NOREPLACE);
  }
  errno = EEXIST;
  return -1;
}

int park_return(int state_fd, int dirfd, const char *base, char kind, const struct stat *st) {
  struct stat parent;
  if (fstat(dirfd, &parent) < 0) return -1;
  int park = park_for(state_fd, &parent);
  if (park < 0 || st->st_uid != parent.st_uid || st->st_gid != parent.st_gid) return -1;
  if (!pristine(dirfd, base, kind, st)) return -1;
  char slot[300];
  slot_name(slot, sizeof slot, kind, base);
  return renameat2(dirfd, base, park, slot, RENAME_NOREPLACE);
}
