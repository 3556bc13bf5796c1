/*
 * The guard's check after the run (guard-check.h; see guard.c): every unit of the snapshot is compared
 * with what is there now; what differs is renamed aside and, where the snapshot kept it, rebuilt from the
 * copy.
 */
#define _GNU_SOURCE
#include "guard-check.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/report.h"
#include "guard-tree.h"
#include "quarantine.h"
#include "tree.h"

static ssize_t read_full(int fd, char *buf, size_t len) {
  size_t done = 0;
  while (done < len) {
    ssize_t r = read(fd, buf + done, len - done);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return -1;
    if (r == 0) break;
    done += (size_t)r;
  }
  return (ssize_t)done;
}

/* Up to LEN bytes of entry E's copy, from OFFSET on, into BUF; how many, or -1. */
static ssize_t read_copy(const struct guard *g, const struct gentry *e, long long offset, char *buf, size_t len) {
  if (e->data < 0) return -1;
  if ((long long)len > e->size - offset) len = (size_t)(e->size - offset);
  size_t done = 0;
  while (done < len) {
    ssize_t r = pread(g->datafd, buf + done, len - done, e->data + offset + (long long)done);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return -1;
    done += (size_t)r;
  }
  return (ssize_t)done;
}

/* Whether FD holds exactly what entry E's copy holds. */
static int same_content(const struct guard *g, int fd, const struct gentry *e) {
  static char a[65536], b[65536];
  for (long long done = 0;;) {
    ssize_t ra = read_full(fd, a, sizeof a);
    ssize_t rb = read_copy(g, e, done, b, sizeof b);
    if (ra < 0 || ra != rb || memcmp(a, b, (size_t)ra) != 0) return 0;
    if (ra == 0) return done == e->size;
    done += ra;
  }
}

static char type_of(const struct stat *st) {
  return S_ISREG(st->st_mode) ? 'f' : S_ISDIR(st->st_mode) ? 'd' : S_ISLNK(st->st_mode) ? 'l' : '?';
}

static const char *last_part(const char *rel) {
  const char *slash = strrchr(rel, '/');
  return slash == NULL ? rel : slash + 1;
}

/* Whether NAME beneath DIRFD is what entry K (and its subtree) recorded. */
static int unchanged(const struct guard *g, int k, int dirfd, const char *name) {
  const struct gentry *e = &g->entries[k];
  struct stat st;
  if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) return 0;
  if (type_of(&st) != e->type || (st.st_mode & 07777) != e->mode) return 0;
  /* Only root can give a file away: an owner that differs for an unprivileged launcher is a new inode. */
  if (geteuid() == 0 && (st.st_uid != e->uid || st.st_gid != e->gid)) return 0;
  if (e->type == 'l') {
    char now[GUARD_PATH_MAX], then[GUARD_PATH_MAX];
    ssize_t a = readlinkat(dirfd, name, now, sizeof now);
    ssize_t b = read_copy(g, e, 0, then, sizeof then);
    return a >= 0 && a == b && memcmp(now, then, (size_t)a) == 0;
  }
  if (e->type == 'f') {
    if (st.st_size != e->size) return 0;
    /* The same inode with the same ctime is the same content, unless it changed in the snapshot's tick. */
    int older = e->cs < g->taken.tv_sec || (e->cs == g->taken.tv_sec && e->cn < g->taken.tv_nsec);
    if (older && st.st_dev == e->dev && st.st_ino == e->ino && st.st_ctim.tv_sec == e->cs && st.st_ctim.tv_nsec == e->cn)
      return 1;
    int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) return 0;
    int same = same_content(g, fd, e);
    close(fd);
    return same;
  }
  int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return 0;
  int n;
  char **names = list_names(fd, &n);
  int same = n >= 0, j = k + 1;
  for (int i = 0; same && i < n; i++, j = g->entries[j].end)
    same = j < e->end && strcmp(last_part(g->entries[j].rel), names[i]) == 0 && unchanged(g, j, fd, names[i]);
  same = same && j == e->end;
  free_names(names, n);
  close(fd);
  return same;
}

/* Rebuilds entry K (and its subtree) as NAME beneath DIRFD: owner (root only), mode and mtime too. */
static int rebuild(const struct guard *g, int k, int dirfd, const char *name) {
  const struct gentry *e = &g->entries[k];
  struct timespec times[2] = {{.tv_nsec = UTIME_OMIT}, {.tv_sec = (time_t)e->ms, .tv_nsec = (long)e->mn}};
  if (e->type == 'l') {
    char target[GUARD_PATH_MAX];
    ssize_t len = read_copy(g, e, 0, target, sizeof target - 1);
    if (len < 0) return -1;
    target[len] = '\0';
    if (symlinkat(target, dirfd, name) < 0) return -1;
    if (geteuid() == 0 && fchownat(dirfd, name, e->uid, e->gid, AT_SYMLINK_NOFOLLOW) < 0) return -1;
    utimensat(dirfd, name, times, AT_SYMLINK_NOFOLLOW);
    return 0;
  }
  int fd, rc = 0;
  if (e->type == 'f') {
    fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    static char chunk[65536];
    for (long long done = 0; fd >= 0 && rc == 0 && done < e->size;) {
      ssize_t r = read_copy(g, e, done, chunk, sizeof chunk);
      rc = r > 0 && pwrite_all(fd, chunk, (size_t)r, done) == 0 ? 0 : -1;
      done += r;
    }
  } else {
    fd = mkdirat(dirfd, name, 0700) == 0 ? openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1;
    for (int j = k + 1; fd >= 0 && rc == 0 && j < e->end; j = g->entries[j].end)
      rc = rebuild(g, j, fd, last_part(g->entries[j].rel));
  }
  if (fd < 0) return -1;
  if (geteuid() == 0 && fchown(fd, e->uid, e->gid) < 0) rc = -1;
  if (fchmod(fd, e->mode) < 0) rc = -1;
  futimens(fd, times);
  close(fd);
  return rc;
}

/* Puts unit U's original back as BASE beneath PFD: built under a temporary name, renamed into place. */
static void restore(const struct guard *g, const struct gunit *u, int pfd, const char *base, FILE *report) {
  char tmp[64], shown[GUARD_PATH_MAX];
  snprintf(tmp, sizeof tmp, ".aleph-restoring-%d", (int)getpid());
  full_path(g, u->rel, shown);
  remove_tree(pfd, tmp);
  if (rebuild(g, u->first, pfd, tmp) == 0 && renameat2(pfd, tmp, pfd, base, RENAME_NOREPLACE) == 0) {
    report_line(report, "restored", shown, NULL);
    return;
  }
  char why[160];
  snprintf(why, sizeof why, "the original could not be put back: %s", strerror(errno));
  remove_tree(pfd, tmp);
  report_line(report, "failed", shown, why);
}

/* A unit that existed, whose directory is gone (removed, renamed or replaced by the command). */
static void gone(struct guard *g, const char *rel, FILE *report) {
  const char *base = last_part(rel);
  char dir[GUARD_PATH_MAX], shown[GUARD_PATH_MAX];
  snprintf(dir, sizeof dir, "%.*s", base > rel ? (int)(base - rel - 1) : 0, rel);
  if (strcmp(dir, g->gone) == 0) return; /* said once per directory */
  snprintf(g->gone, sizeof g->gone, "%s", dir);
  full_path(g, dir, shown);
  report_line(report, "unrestored", shown, "the directory was removed, renamed or replaced");
}

/*
 * An entry of a unit the snapshot could not keep: what changed since it is renamed aside, one by one (REPORT
 * non-NULL), or only looked at (REPORT NULL). -1 when the walk cannot vouch for the whole entry (past the
 * bounds, an entry that cannot be stat'ed or opened, a name too long): then nothing of it is skipped, the
 * caller sets the unit aside whole.
 */
static int walk_unkept(const struct guard *g, int dirfd, const char *name, char *path, int depth, int *seen,
                       int *moved, FILE *report) {
  struct stat st;
  if (++*seen > GUARD_MAX_WALK || depth > GUARD_MAX_DEPTH) return -1;
  if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) return errno == ENOENT ? 0 : -1;
  if (!S_ISDIR(st.st_mode)) {
    if (report != NULL && changed_since(&st, &g->taken) && set_aside(dirfd, name, report, path) == 0) (*moved)++;
    return 0;
  }
  int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return errno == ENOENT ? 0 : -1;
  int n, rc = 0;
  char **names = list_names(fd, &n);
  size_t len = strlen(path);
  if (n < 0) rc = -1;
  for (int i = 0; i < n && rc == 0; i++) {
    if (len + 2 + strlen(names[i]) >= GUARD_PATH_MAX) {
      rc = -1;
      break;
    }
    path[len] = '/';
    strcpy(path + len + 1, names[i]);
    rc = walk_unkept(g, fd, names[i], path, depth + 1, seen, moved, report);
    path[len] = '\0';
  }
  free_names(names, n);
  close(fd);
  return rc;
}

/* A unit the snapshot could not keep: what changed is set aside, or all of it when the walk cannot vouch. */
static void check_unkept(const struct guard *g, int pfd, const char *base, char *shown, FILE *report) {
  int seen = 0, moved = 0;
  char why[200];
  if (walk_unkept(g, pfd, base, shown, 0, &seen, &moved, NULL) < 0) {
    snprintf(why, sizeof why,
             "more than %d entries, deeper than %d or unreadable: set aside whole, the original is not back",
             GUARD_MAX_WALK, GUARD_MAX_DEPTH);
    if (set_aside(pfd, base, report, shown) == 0) report_line(report, "unrestored", shown, why);
    return;
  }
  seen = 0;
  if (walk_unkept(g, pfd, base, shown, 0, &seen, &moved, report) < 0) {
    snprintf(why, sizeof why, "changed while it was checked: set aside whole, the original is not back");
    if (set_aside(pfd, base, report, shown) == 0) report_line(report, "unrestored", shown, why);
    return;
  }
  snprintf(why, sizeof why, "larger than a snapshot keeps (%d entries, %lld MiB) or unreadable", GUARD_MAX_ENTRIES,
           GUARD_MAX_BYTES >> 20);
  if (moved > 0) report_line(report, "unrestored", shown, why);
}

static void check_plain(struct guard *g, const struct gunit *u, FILE *report) {
  const char *base;
  char shown[GUARD_PATH_MAX];
  int pfd = open_parent_checked(g, u->rel, &base, report);
  if (pfd < 0) {
    if (u->present) gone(g, u->rel, report);
    return;
  }
  struct stat st;
  int exists = fstatat(pfd, base, &st, AT_SYMLINK_NOFOLLOW) == 0;
  full_path(g, u->rel, shown);
  if (!u->present) {
    if (exists) set_aside(pfd, base, report, shown);
  } else if (!u->kept) {
    if (exists) check_unkept(g, pfd, base, shown, report);
    else report_line(report, "unrestored", shown, "removed; larger than a snapshot keeps, so not put back");
  } else if (!exists || !unchanged(g, u->first, pfd, base)) {
    if (!exists || set_aside(pfd, base, report, shown) == 0) restore(g, u, pfd, base, report);
  }
  close(pfd);
}

static int find_entry(const struct guard *g, const struct gunit *u, const char *rel) {
  for (int k = u->first; k < u->first + u->count; k++)
    if (strcmp(g->entries[k].rel, rel) == 0) return k;
  return -1;
}

/* A container's directory: an entry it did not hold is renamed aside; its directories are walked. */
static void check_container_dir(struct guard *g, const struct gunit *u, int fd, const char *rel, FILE *report) {
  int n;
  char **names = list_names(fd, &n);
  char child[GUARD_PATH_MAX], shown[GUARD_PATH_MAX];
  for (int i = 0; i < n; i++) {
    struct stat st;
    if (join(child, rel, names[i]) < 0 || fstatat(fd, names[i], &st, AT_SYMLINK_NOFOLLOW) < 0) continue;
    full_path(g, child, shown);
    int k = find_entry(g, u, child);
    const struct gentry *e = k < 0 ? NULL : &g->entries[k];
    if (e == NULL || (e->type == 'o') != !S_ISDIR(st.st_mode) ||
        (e->type == 'o' && (st.st_ino != e->ino || st.st_ctim.tv_sec != e->cs || st.st_ctim.tv_nsec != e->cn))) {
      set_aside(fd, names[i], report, shown);
    } else if (e->type == 'i') {
      int c = openat(fd, names[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (c >= 0) {
        check_container_dir(g, u, c, child, report);
        close(c);
      }
    }
  }
  free_names(names, n);
}

static void check_container(struct guard *g, const struct gunit *u, FILE *report) {
  const char *base;
  char shown[GUARD_PATH_MAX];
  int pfd = open_parent_checked(g, u->rel, &base, report);
  if (pfd < 0) {
    gone(g, u->rel, report);
    return;
  }
  struct stat st;
  full_path(g, u->rel, shown);
  if (fstatat(pfd, base, &st, AT_SYMLINK_NOFOLLOW) < 0) {
    report_line(report, "unrestored", shown, "removed or renamed");
  } else if (!S_ISDIR(st.st_mode)) {
    set_aside(pfd, base, report, shown);
  } else if (!u->kept) {
    /* Past the snapshot's bounds: not exempt from the check after the run (guard_each_whole), which sets
     * aside the control entries the run wrote in each git directory inside, at any depth. Nothing skipped. */
  } else {
    int fd = openat(pfd, base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0) {
      check_container_dir(g, u, fd, u->rel, report);
      close(fd);
    }
  }
  close(pfd);
}

void check_unit(struct guard *g, const struct gunit *u, FILE *report) {
  if (u->kind == 'c') check_container(g, u, report);
  else check_plain(g, u, report);
}
