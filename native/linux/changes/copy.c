/* Sparse-aware copies on descriptors (copy.h). */
#define _GNU_SOURCE
#include "copy.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Copies [OFF, END) of IN to OUT at the same offsets. */
static int copy_range(int in, int out, off_t off, off_t end) {
  while (off < end) {
    loff_t a = off, b = off;
    ssize_t n = copy_file_range(in, &a, out, &b, (size_t)(end - off), 0);
    if (n < 0 && (errno == EXDEV || errno == ENOSYS || errno == EOPNOTSUPP || errno == EINVAL)) {
      char buf[65536];
      size_t want = (size_t)(end - off) < sizeof buf ? (size_t)(end - off) : sizeof buf;
      n = pread(in, buf, want, off);
      if (n > 0 && pwrite(out, buf, (size_t)n, off) != n) return -1;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return -1;
    if (n == 0) break; /* the file shrank meanwhile */
    off += n;
  }
  return 0;
}

int copy_bytes(int in, int out, long long size) {
  if (ftruncate(out, 0) < 0) return -1;
  off_t off = 0;
  while (off < size) {
    off_t data = lseek(in, off, SEEK_DATA);
    if (data < 0 && errno == ENXIO) break; /* holes to the end */
    if (data < 0) data = off;               /* no SEEK_DATA: copy all */
    off_t hole = lseek(in, data, SEEK_HOLE);
    if (hole < 0 || hole > size) hole = size;
    if (copy_range(in, out, data, hole) < 0) return -1;
    off = hole;
  }
  return ftruncate(out, size);
}

int copy_file(int pfd, const char *name, const struct path_state *s, int blobs, const char *blob, long long budget,
              long long *allocated, const char **why) {
  int in = openat(pfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  struct stat is;
  if (in < 0 || fstat(in, &is) < 0 || is.st_ino != s->ino || is.st_dev != s->dev) {
    *why = in < 0 && errno == EACCES ? "a file the launcher cannot read" : "a file that changed while it was copied";
    if (in >= 0) close(in);
    return -1;
  }
  if (is.st_blocks * 512 > budget) {
    close(in);
    return *why = "the run's pre-run copies exceed the budget", -1;
  }
  int out = openat(blobs, blob, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  int bad = out < 0 || copy_bytes(in, out, is.st_size) < 0;
  struct stat os;
  if (!bad && fstat(out, &os) == 0) *allocated = (long long)os.st_blocks * 512;
  if (!bad && *allocated > budget) bad = 2;
  close(in);
  if (out >= 0) close(out);
  if (bad) {
    if (out >= 0) unlinkat(blobs, blob, 0);
    *why = bad == 2 ? "the run's pre-run copies exceed the budget" : "a pre-run copy could not be written";
    return -1;
  }
  return 0;
}
