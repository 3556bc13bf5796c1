/*
 * The quarantine (quarantine.h): what the checks after the run set aside (after-run/check.c, the git rules,
 * the absent protected paths, tier 3's guard) leaves the user's tree for `~/.aleph/quarantine/<session>`,
 * where no host tool reads it and `git add -A` cannot commit it. Each path keeps one copy there, at the
 * same path below the quarantine (a later plant of the same path replaces the earlier copy; a path too long
 * or odd for that goes under `long/` by a hash of it). The original is first renamed into the session's
 * trash (`.aleph-trash`, same filesystem: out of the user's tree at once), then copied from there (keep.c:
 * new files, owner-only, never executable, within the run's and the session's budgets) and removed: a
 * command that held a descriptor on a planted directory reaches the trash, never the copy. Across
 * filesystems it is copied and removed in place. What a budget cannot take is removed all the same and
 * reported `notkept PATH: why`. Concurrent runs of a session take the directory's lock.
 */
#define _GNU_SOURCE
#include "quarantine.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/errors.h"
#include "../common/paths.h"
#include "../common/report.h"
#include "keep.h"
#include "tree.h"

#define QUARANTINE_PATH_MAX 3072
/* Below the session's quarantine: where an original is renamed first, out of every run's reach by name. */
#define TRASH ".aleph-trash"

static const char *qpath;
static int qfd = -2; /* -2: not opened yet; -1: could not be */

void quarantine_use(const char *dir) {
  if (qfd >= 0) close(qfd);
  qfd = -2;
  qpath = dir;
}

const char *quarantine_dir(void) { return qpath; }

void quarantine_budget(const char *spec) {
  char run[32];
  const char *colon = strchr(spec, ':');
  if (colon == NULL || colon - spec >= (long)sizeof run) die("launch: --quarantine-budget %s: not RUN:SESSION (bytes)", spec);
  snprintf(run, sizeof run, "%.*s", (int)(colon - spec), spec);
  long r = parse_long(run, "--quarantine-budget bytes"), s = parse_long(colon + 1, "--quarantine-budget bytes");
  if (r < 0 || s < 0) die("launch: --quarantine-budget %s: bytes cannot be negative", spec);
  keep_budget(r, s);
}

/* The quarantine's descriptor: its parent opened without a symlink on the way, itself made 0700. */
static int quarantine_fd(void) {
  if (qfd != -2) return qfd;
  qfd = -1;
  const char *slash = qpath == NULL ? NULL : strrchr(qpath, '/');
  if (slash == NULL || slash[1] == '\0' || qpath[0] != '/') return -1;
  char parent[4096];
  snprintf(parent, sizeof parent, "%.*s", slash == qpath ? 1 : (int)(slash - qpath), qpath);
  int p = open_path(AT_FDCWD, parent, RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
  int real = p < 0 ? -1 : openat(p, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (p >= 0) close(p);
  if (real < 0) return -1;
  mkdirat(real, slash + 1, 0700);
  int fd = openat(real, slash + 1, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  close(real);
  struct stat st;
  if (fd >= 0 && (fstat(fd, &st) < 0 || st.st_uid != geteuid())) {
    close(fd);
    fd = -1;
  }
  if (fd >= 0 && (st.st_mode & 07777) != 0700) fchmod(fd, 0700);
  if (fd >= 0) {
    flock(fd, LOCK_EX);
    remove_tree(fd, TRASH); /* what an earlier set-aside could not remove (a run kept writing into it) */
    keep_session(fd);       /* what the session's quarantine holds already counts against its budget */
    flock(fd, LOCK_UN);
  }
  return qfd = fd;
}

/* Whether PATH can be mirrored below the quarantine component by component. */
static int mirrorable(const char *path) {
  if (path[0] != '/' || strlen(path) > QUARANTINE_PATH_MAX) return 0;
  for (const char *p = path + 1; *p != '\0';) {
    const char *end = strchrnul(p, '/');
    size_t n = (size_t)(end - p);
    if (n == 0 || n > 255 || (n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.')) return 0;
    p = *end == '/' ? end + 1 : end;
  }
  return 1;
}

/* The directory below the quarantine where PATH's copy goes (made as needed; an earlier copy of a file
 * where a directory is now needed goes), and *BASE the copy's name in it; -1 when it cannot be made. */
static int dest_dir(const char *path, char *rel, size_t size, const char **base) {
  if (mirrorable(path)) snprintf(rel, size, "%s", path + 1);
  else {
    unsigned long long h = 14695981039346656037ull;
    for (const char *c = path; *c; c++) h = (h ^ (unsigned char)*c) * 1099511628211ull;
    const char *last = strrchr(path, '/');
    snprintf(rel, size, "long/%016llx-%.200s", h, last != NULL && last[1] != '\0' ? last + 1 : "entry");
  }
  int cur = fcntl(qfd, F_DUPFD_CLOEXEC, 3);
  char *p = rel;
  for (char *slash; cur >= 0 && (slash = strchr(p, '/')) != NULL; p = slash + 1) {
    *slash = '\0';
    int next = openat(cur, p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (next < 0 && errno != ENOENT) remove_tree(cur, p);
    if (next < 0 && (mkdirat(cur, p, 0700) == 0 || errno == EEXIST))
      next = openat(cur, p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    *slash = '/';
    close(cur);
    cur = next;
  }
  *base = p;
  return cur;
}

/* NAME beneath DIRFD renamed to *TMP (a new name) in the session's trash, whose descriptor it returns: out
 * of the user's tree at once, where no run reaches it by name. -1 (errno) when it cannot be (EXDEV: another
 * filesystem). A directory must be writable to move (its ".." changes): a command may have made it 0000,
 * so its owner (a non-root launcher) makes it rwx through its descriptor and tries again. */
static int detach(int dirfd, const char *name, char *tmp, size_t size) {
  static unsigned serial;
  if (mkdirat(qfd, TRASH, 0700) < 0 && errno != EEXIST) return -1;
  int t = openat(qfd, TRASH, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (t < 0) return -1;
  snprintf(tmp, size, "%d-%u", (int)getpid(), ++serial);
  int rc = renameat2(dirfd, name, t, tmp, RENAME_NOREPLACE);
  if (rc < 0 && errno == EACCES && owner_rwx(dirfd, name) == 0) rc = renameat2(dirfd, name, t, tmp, RENAME_NOREPLACE);
  if (rc == 0) return t;
  int e = errno;
  close(t);
  errno = e;
  return -1;
}

/* Sets NAME beneath DIRFD aside to BASE beneath TO: renamed into the trash, copied from there (keep.c: a
 * descriptor a run held on the original reaches the trash, never the copy) and removed. Where no rename
 * reaches (another filesystem), copied and removed in place. 0 moved; 1 removed only, not kept (*WHY:
 * why); -1 failed (errno). */
static int move_in(int dirfd, const char *name, int to, const char *base, const char **why) {
  remove_tree(to, base); /* the earlier copy of the same path */
  char tmp[32];
  int t = detach(dirfd, name, tmp, sizeof tmp);
  if (t >= 0) {
    int rc = keep_copy(t, tmp, to, base, why) == 0 ? 0 : 1;
    remove_tree(t, tmp); /* what stays (a run writing into it meanwhile) goes with the next set-aside */
    close(t);
    return rc;
  }
  if (errno == ENOENT) return -1; /* gone meanwhile (another run set it aside first) */
  if (keep_copy(dirfd, name, to, base, why) == 0) return remove_tree(dirfd, name) == 0 ? 0 : -1;
  struct stat st;
  if (errno == ENOENT && fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT)
    return -1; /* gone meanwhile (another run set it aside first) */
  return remove_tree(dirfd, name) == 0 ? 1 : -1;
}

static void report_moved(FILE *report, const char *path, const char *rel) {
  char where[QUARANTINE_PATH_MAX + 4400];
  snprintf(where, sizeof where, "%s/%s", qpath, rel);
  report_pair(report, "quarantined", path, where, NULL);
}

int set_aside(int dirfd, const char *name, FILE *report, const char *path) {
  struct stat st;
  if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT) return 0;
  int q = quarantine_fd();
  char rel[QUARANTINE_PATH_MAX + 300];
  const char *base = NULL;
  int to = -1, rc = -1, e = 0;
  const char *why = "no quarantine";
  if (q >= 0) {
    flock(q, LOCK_EX);
    to = dest_dir(path, rel, sizeof rel, &base);
  }
  if (to >= 0) {
    rc = move_in(dirfd, name, to, base, &why);
    e = errno;
    close(to);
  }
  if (q >= 0) flock(q, LOCK_UN);
  if (rc == 0) {
    report_moved(report, path, rel);
    return 0;
  }
  if (rc < 0 && e == ENOENT) return 0; /* another run set it aside first */
  /* Not kept (over a budget, or no quarantine): removed from the user's tree all the same (fail closed),
   * and said so. */
  if (rc == 1 || (to < 0 && remove_tree(dirfd, name) == 0)) {
    if (q >= 0) report_line(report, "notkept", path, why);
    report_line(report, "removed", path, NULL);
    return 0;
  }
  report_line(report, "failed", path, strerror(e != 0 ? e : errno));
  return -1;
}
