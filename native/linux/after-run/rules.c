/*
 * The check's rules for one entry (rules.h). Set-id: a command's file with S_ISUID or S_ISGID would keep
 * them on the host (nosuid holds only inside the sandbox, and on a root host the idmapped mount made the
 * file the workspace owner's): both bits go, on the inode found (opened O_PATH without following a symlink,
 * changed through /proc/self/fd). Hostile by default: what cannot be read or stat'ed is not clean; it is
 * set aside whole (copied after it is made readable through its O_PATH descriptor, or removed) and the
 * run's details say the check was incomplete.
 */
#define _GNU_SOURCE
#include "rules.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../common/report.h"
#include "quarantine.h"
#include "symlink-out.h"

int clear_setid_fd(struct check *c, int fd, const char *path) {
  struct stat now;
  if (fstat(fd, &now) < 0 || S_ISLNK(now.st_mode) || S_ISDIR(now.st_mode)) return -1;
  if ((now.st_mode & (S_ISUID | S_ISGID)) == 0) return 0;
  char proc[64];
  snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
  if (chmod(proc, now.st_mode & 07777 & ~(mode_t)(S_ISUID | S_ISGID)) < 0) return -1;
  report_line(c->report, "setid", path, NULL);
  return 0;
}

void clear_setid(struct check *c, int dirfd, const char *name, const struct stat *st, const char *path) {
  int fd = openat(dirfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
  struct stat now;
  int ok = fd >= 0 && fstat(fd, &now) == 0 && now.st_dev == st->st_dev && now.st_ino == st->st_ino &&
           clear_setid_fd(c, fd, path) == 0;
  int e = errno;
  if (fd >= 0) close(fd);
  if (!ok && e != ENOENT) hostile(c, dirfd, name, path, e);
}

void hostile(struct check *c, int dirfd, const char *name, const char *path, int e) {
  char why[200];
  snprintf(why, sizeof why, "could not be examined (%s): set aside whole", strerror(e));
  report_line(c->report, "incomplete", path, why);
  set_aside(dirfd, name, c->report, path);
}

void check_changed_file(struct check *c, int dirfd, const char *name, const struct stat *st, const char *path) {
  if (S_ISLNK(st->st_mode)) report_symlink(c, dirfd, name, path);
  else if ((st->st_mode & (S_ISUID | S_ISGID)) != 0) clear_setid(c, dirfd, name, st, path);
}
