/*
 * Copies into the quarantine (keep.h). A file or directory a (non-root) launcher may not read is opened
 * O_PATH without following a symlink, checked by fstat, made readable through that descriptor
 * (/proc/self/fd/N names that very inode) and reopened from it: never a mode change by name, and never
 * of a file with other links (not kept then: only this link of it is removed).
 */
#define _GNU_SOURCE
#include "keep.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tree.h"
#include "walk.h"

#define KEEP_LINKS 256

static long long run_left = KEEP_RUN_BYTES, run_max = KEEP_RUN_BYTES;
static long long session_max = KEEP_SESSION_BYTES, session_left = KEEP_SESSION_BYTES;
static struct {
  dev_t dev;
  ino_t ino;
  int fd; /* the first copy's */
} links[KEEP_LINKS];
static int nlinks;

struct copy {
  int entries;
  long long charged;
  const char *why;
};

void keep_budget(long long run_bytes, long long session_bytes) {
  run_left = run_max = run_bytes;
  session_left = session_max = session_bytes;
}

long long keep_run_budget(void) { return run_max; }

static long long cost(const struct stat *st) {
  long long b = (long long)st->st_blocks * 512;
  return b < KEEP_ENTRY_BYTES ? KEEP_ENTRY_BYTES : b;
}

static int usage_cb(struct walk *w, struct walk_dir *d, const char *name, const struct stat *st, int e, void *ctx) {
  (void)w, (void)d, (void)name, (void)e;
  if (st != NULL) *(long long *)ctx += cost(st);
  return st != NULL && S_ISDIR(st->st_mode);
}

void keep_session(int dirfd) {
  for (int i = 0; i < nlinks; i++) close(links[i].fd);
  nlinks = 0;
  long long used = 0;
  static const struct walk_ops ops = {.entry = usage_cb};
  if (dirfd >= 0) walk_tree(dirfd, "", NULL, &ops, &used);
  session_left = session_max - used;
}

static int charge(struct copy *c, long long bytes) {
  if (bytes > run_left || bytes > session_left) {
    c->why = bytes > run_left ? "over the quarantine's budget for a run" : "over the quarantine's budget for the session";
    errno = EFBIG;
    return -1;
  }
  run_left -= bytes;
  session_left -= bytes;
  c->charged += bytes;
  return 0;
}

/* NAME beneath FROM opened with FLAGS, never through a symlink; one the launcher may not read (its owner,
 * not root: a command made it 0000) is made owner-readable through an O_PATH descriptor of it first,
 * whose type must be TYPE. */
static int open_readable(int from, const char *name, int flags, mode_t type, mode_t mode) {
  int fd = openat(from, name, flags | O_NOFOLLOW | O_CLOEXEC);
  if (fd >= 0 || errno != EACCES) return fd;
  int p = openat(from, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
  struct stat st;
  /* A file with other links may be one of the user's own, linked here by the command: its mode stays. */
  if (p < 0 || fstat(p, &st) < 0 || (st.st_mode & S_IFMT) != type || (type == S_IFREG && st.st_nlink > 1) ||
      chmod_opened(p, mode) < 0) {
    if (p >= 0) close(p);
    errno = EACCES;
    return -1;
  }
  char proc[64];
  snprintf(proc, sizeof proc, "/proc/self/fd/%d", p);
  fd = type == S_IFDIR ? openat(p, ".", flags | O_CLOEXEC) : open(proc, flags | O_CLOEXEC);
  close(p);
  return fd;
}

/* The data of IN into OUT, holes left holes, up to IN's size when it was opened; charged as written. */
static int copy_data(int in, int out, struct copy *c) {
  static char buf[65536];
  off_t end = lseek(in, 0, SEEK_END);
  if (end < 0) return -1;
  for (off_t pos = 0; pos < end;) {
    off_t data = lseek(in, pos, SEEK_DATA);
    if (data < 0 && errno == ENXIO) break; /* a hole to the end */
    if (data < 0) data = pos;              /* no SEEK_DATA here: all of it is data */
    off_t hole = lseek(in, data, SEEK_HOLE);
    if (hole < 0 || hole > end) hole = end;
    for (off_t at = data; at < hole;) {
      size_t want = (size_t)(hole - at) < sizeof buf ? (size_t)(hole - at) : sizeof buf;
      ssize_t r = pread(in, buf, want, at);
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) return -1;
      if (r == 0) break; /* it shrank meanwhile */
      if (charge(c, r) < 0) return -1;
      for (ssize_t off = 0; off < r;) {
        ssize_t n = pwrite(out, buf + off, (size_t)(r - off), at + off);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return -1;
        off += n;
      }
      at += r;
    }
    pos = hole;
  }
  return ftruncate(out, end);
}

/* A further link of a file already copied (same device and inode): linked to that copy. 0 when linked. */
static int link_again(const struct stat *st, int to, const char *to_name) {
  for (int i = 0; i < nlinks; i++) {
    if (links[i].dev != st->st_dev || links[i].ino != st->st_ino) continue;
    char proc[64];
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", links[i].fd);
    if (linkat(AT_FDCWD, proc, to, to_name, AT_SYMLINK_FOLLOW) == 0) return 0;
    /* That copy went (a tree that was not kept): the next copy of the inode takes its place. */
    close(links[i].fd);
    links[i] = links[--nlinks];
    return -1;
  }
  return -1;
}

static int copy_file(int from, const char *name, int to, const char *to_name, struct copy *c) {
  int in = open_readable(from, name, O_RDONLY | O_NONBLOCK | O_NOCTTY, S_IFREG, 0600);
  struct stat st;
  if (in < 0 || fstat(in, &st) < 0) {
    if (in >= 0) close(in);
    return -1;
  }
  int rc = 0, out = -1;
  if (!S_ISREG(st.st_mode)) goto done; /* swapped for a fifo or device meanwhile: nothing to keep */
  if (st.st_nlink > 1 && link_again(&st, to, to_name) == 0) goto done;
  out = openat(to, to_name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  long long before = c->charged;
  rc = out < 0 ? -1 : copy_data(in, out, c);
  /* What the copy allocated beyond the data written (its last block, its inode). */
  struct stat made;
  if (rc == 0 && fstat(out, &made) == 0 && cost(&made) > c->charged - before)
    rc = charge(c, cost(&made) - (c->charged - before));
  if (rc == 0 && st.st_nlink > 1 && nlinks < KEEP_LINKS) {
    links[nlinks].dev = st.st_dev;
    links[nlinks].ino = st.st_ino;
    links[nlinks++].fd = out;
    out = -1;
  }
done:
  close(in);
  if (out >= 0) close(out);
  return rc;
}

static int copy_in(int from, const char *name, int to, const char *to_name, struct copy *c, int depth);

static int copy_dir(int from, const char *name, int to, const char *to_name, struct copy *c, int depth) {
  int src = open_readable(from, name, O_RDONLY | O_DIRECTORY, S_IFDIR, 0700);
  if (src < 0 || mkdirat(to, to_name, 0700) < 0) {
    if (src >= 0) close(src);
    return -1;
  }
  int dst = openat(to, to_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  struct stat made;
  int rc = dst < 0 || fstat(dst, &made) < 0 ? -1 : charge(c, cost(&made));
  DIR *dir = rc == 0 ? fdopendir(src) : NULL;
  if (dir == NULL) close(src);
  struct dirent *e;
  while (dir != NULL && rc == 0 && (e = readdir(dir)) != NULL) {
    const char *n = e->d_name;
    if (n[0] == '.' && (n[1] == '\0' || (n[1] == '.' && n[2] == '\0'))) continue;
    rc = copy_in(dirfd(dir), n, dst, n, c, depth + 1);
  }
  if (dir != NULL) closedir(dir);
  else rc = -1;
  if (dst >= 0) close(dst);
  return rc;
}

static int copy_in(int from, const char *name, int to, const char *to_name, struct copy *c, int depth) {
  struct stat st;
  if (++c->entries > KEEP_ENTRIES || depth > KEEP_DEPTH) {
    c->why = depth > KEEP_DEPTH ? "deeper than the quarantine keeps" : "more entries than the quarantine keeps";
    return -1;
  }
  if (fstatat(from, name, &st, AT_SYMLINK_NOFOLLOW) < 0) return depth > 0 && errno == ENOENT ? 0 : -1;
  if (S_ISREG(st.st_mode)) return copy_file(from, name, to, to_name, c);
  if (S_ISDIR(st.st_mode)) return copy_dir(from, name, to, to_name, c, depth);
  if (!S_ISLNK(st.st_mode)) return 0; /* a fifo, socket or device: nothing of it to keep */
  char target[4096];
  ssize_t n = readlinkat(from, name, target, sizeof target - 1);
  if (n < 0) return -1;
  target[n] = '\0';
  return charge(c, KEEP_ENTRY_BYTES) < 0 ? -1 : symlinkat(target, to, to_name);
}

int keep_copy(int from, const char *name, int to, const char *to_name, const char **why) {
  struct copy c = {0};
  if (copy_in(from, name, to, to_name, &c, 0) == 0) return 0;
  int e = errno;
  remove_tree(to, to_name);
  /* Nothing of it is kept: what it was charged is free again (its links too are gone). */
  run_left += c.charged;
  session_left += c.charged;
  *why = c.why != NULL ? c.why : strerror(e);
  errno = e;
  return -1;
}
