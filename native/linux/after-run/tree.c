/*
 * Whole trees on descriptors (tree.h): removal and stripping walk the tree completely (walk.c), so no
 * depth bounds them; a copy, made only where a rename cannot reach (another filesystem), stops at its
 * budget and leaves nothing half made.
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

static int remove_entry_cb(struct walk *w, struct walk_dir *d, const char *name, const struct stat *st, int e,
                           void *ctx) {
  (void)e;
  (void)ctx;
  int fd = walk_fd(w, d);
  if (st != NULL && S_ISDIR(st->st_mode)) {
    /* Readable and writable by its owner before it is entered (a command may have made it 0000). */
    if ((st->st_mode & 0700) != 0700) fchmodat(fd, name, 0700, 0);
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
  struct stat st;
  if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode) && (st.st_mode & 0700) != 0700)
    fchmodat(dirfd, name, 0700, 0);
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

struct budget {
  long long bytes;
  int entries;
};

static int copy_file(int from, const char *name, int to, const char *to_name, struct budget *b, off_t size) {
  if ((b->bytes -= size) < 0) return -1;
  int in = openat(from, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  int out = in < 0 ? -1 : openat(to, to_name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  int rc = out < 0 ? -1 : 0;
  static char buf[65536];
  for (long long done = 0; rc == 0;) {
    ssize_t r = read(in, buf, sizeof buf);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0 || (done += r) > size) {
      rc = r == 0 ? 0 : -1;
      break;
    }
    for (ssize_t off = 0; rc == 0 && off < r;) {
      ssize_t n = write(out, buf + off, (size_t)(r - off));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) rc = -1;
      else off += n;
    }
  }
  if (in >= 0) close(in);
  if (out >= 0) close(out);
  return rc;
}

static int copy_in(int from, const char *name, int to, const char *to_name, struct budget *b, int depth) {
  struct stat st;
  if (--b->entries < 0 || depth > TREE_COPY_DEPTH || fstatat(from, name, &st, AT_SYMLINK_NOFOLLOW) < 0) return -1;
  if (S_ISREG(st.st_mode)) return copy_file(from, name, to, to_name, b, st.st_size);
  if (S_ISLNK(st.st_mode)) {
    char target[4096];
    ssize_t n = readlinkat(from, name, target, sizeof target - 1);
    if (n < 0) return -1;
    target[n] = '\0';
    return symlinkat(target, to, to_name);
  }
  if (!S_ISDIR(st.st_mode)) return 0; /* a fifo, socket or device: nothing of it to keep */
  int src = openat(from, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  int dst = src < 0 || mkdirat(to, to_name, 0700) < 0
                ? -1
                : openat(to, to_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  int rc = dst < 0 ? -1 : 0;
  DIR *dir = rc == 0 ? fdopendir(src) : NULL;
  if (dir != NULL) src = -1; /* the stream owns it now */
  else rc = -1;
  struct dirent *e;
  while (rc == 0 && (e = readdir(dir)) != NULL) {
    const char *n = e->d_name;
    if (n[0] == '.' && (n[1] == '\0' || (n[1] == '.' && n[2] == '\0'))) continue;
    rc = copy_in(dirfd(dir), n, dst, n, b, depth + 1);
  }
  if (dir != NULL) closedir(dir);
  if (src >= 0) close(src);
  if (dst >= 0) close(dst);
  return rc;
}

int copy_tree(int from, const char *name, int to, const char *to_name) {
  struct budget b = {.bytes = TREE_COPY_BYTES, .entries = TREE_COPY_ENTRIES};
  if (copy_in(from, name, to, to_name, &b, 0) == 0) return 0;
  remove_tree(to, to_name);
  return -1;
}

/* A file's name in the quarantine made owner-only and never executable. A file with other links (a command
 * may hard-link a planted name to one of the user's own files) is not chmod'ed, which would change the
 * user's file too: its name here is replaced by a private copy, or removed when it cannot be copied (its
 * content stays at its other link). */
static void strip_file(int dirfd, const char *name, const struct stat *st) {
  if (S_ISREG(st->st_mode) && st->st_nlink > 1) {
    char tmp[64];
    snprintf(tmp, sizeof tmp, ".aleph-private-%d", (int)getpid());
    struct budget b = {.bytes = TREE_COPY_BYTES, .entries = 1};
    unlinkat(dirfd, tmp, 0);
    if (copy_file(dirfd, name, dirfd, tmp, &b, st->st_size) == 0 && renameat(dirfd, tmp, dirfd, name) == 0) return;
    unlinkat(dirfd, tmp, 0);
    unlinkat(dirfd, name, 0);
    return;
  }
  if ((st->st_mode & 07777) != 0600) fchmodat(dirfd, name, 0600, 0);
}

static int strip_entry_cb(struct walk *w, struct walk_dir *d, const char *name, const struct stat *st, int e,
                          void *ctx) {
  (void)e;
  (void)ctx;
  if (st == NULL || S_ISLNK(st->st_mode)) return 0;
  if (!S_ISDIR(st->st_mode)) {
    strip_file(walk_fd(w, d), name, st);
    return 0;
  }
  if ((st->st_mode & 07777) != 0700) fchmodat(walk_fd(w, d), name, 0700, 0);
  return 1;
}

void strip_tree(int dirfd, const char *name) {
  struct stat st;
  if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || S_ISLNK(st.st_mode)) return;
  if (!S_ISDIR(st.st_mode)) {
    strip_file(dirfd, name, &st);
    return;
  }
  fchmodat(dirfd, name, 0700, 0);
  int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return;
  static const struct walk_ops ops = {.entry = strip_entry_cb};
  walk_tree(fd, "", NULL, &ops, NULL);
  close(fd);
}
