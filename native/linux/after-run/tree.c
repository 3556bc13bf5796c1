/*
 * Whole trees on descriptors (tree.h): removal walks the tree completely (walk.c), so no depth bounds it.
 * A directory it must open first is made owner-writable through an O_PATH descriptor of it, never by name.
 */
#define _GNU_SOURCE
#include "tree.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "walk.h"

int chmod_opened(int fd, mode_t mode) {
  char proc[64];
  snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
  return chmod(proc, mode);
}

int owner_rwx(int dirfd, const char *name) {
  int p = openat(dirfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
  struct stat st;
  int rc = p < 0 || fstat(p, &st) < 0 || !S_ISDIR(st.st_mode) ? -1 : 0;
  if (rc == 0 && (st.st_mode & 0700) != 0700) rc = chmod_opened(p, (st.st_mode & 07777) | 0700);
  if (p >= 0) close(p);
  return rc;
}

static int remove_entry_cb(struct walk *w, struct walk_dir *d, const char *name, const struct stat *st, int e,
                           void *ctx) {
  (void)e;
  (void)ctx;
  int fd = walk_fd(w, d);
  if (st != NULL && S_ISDIR(st->st_mode)) {
    /* Readable and writable by its owner before it is entered (a command may have made it 0000). */
    if ((st->st_mode & 0700) != 0700) owner_rwx(fd, name);
    return 1;
  }
  unlinkat(fd, name, 0);
  return 0;
}

static void remove_leave_cb(struct walk *w, struct walk_dir *d, struct walk_dir *p, void *ctx) {
  (void)ctx;
  if (p != NULL) unlinkat(walk_fd(w, p), d->name, AT_REMOVEDIR);
}

int remove_tree(int dirfd, const char *name) {
  if (unlinkat(dirfd, name, 0) == 0 || errno == ENOENT) return 0;
  if (errno != EISDIR && errno != EPERM) return -1;
  owner_rwx(dirfd, name);
  int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return -1;
  static const struct walk_ops ops = {.entry = remove_entry_cb, .leave = remove_leave_cb};
  /* Passes until the directory empties: one that moved or lost entries to another remover goes again. */
  for (int pass = 0; pass < 4; pass++) {
    walk_tree(fd, "", NULL, &ops, NULL);
    if (unlinkat(dirfd, name, AT_REMOVEDIR) == 0 || errno == ENOENT) {
      close(fd);
      return 0;
    }
  }
  close(fd);
  return -1;
}
