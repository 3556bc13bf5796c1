/*
 * The git sweep, run by the launcher's supervisor after the sandbox has ended (`--git-sweep`, with
 * `--report FILE`): host git must not run code or configuration a command wrote.
 *
 * The repository at the top of each writable root has its control files mounted read-only during the
 * run (protected paths; in tier 3 the guard, guard.c, checks them instead). Below it, and wherever no
 * repository existed, a command can create or change repositories (git init, a nested clone, a planted
 * `.git` file or symlink, a gitlink target, a git directory with no `.git` at all). So every `.git` found
 * below a swept root — a directory, a file or a symlink, at any depth up to the walk's bounds — and every
 * directory that is itself a git directory to git (it holds HEAD, objects and refs: git run inside it
 * uses it) is checked, and each control file of it that
 * changed during the run (its ctime is not older than the run's start; a command cannot set a ctime
 * back), or the `.git` file or symlink itself, is renamed aside to `NAME.aleph-quarantined[-N]` in its
 * own directory, where host git never reads it. Each rename is written to the report as one line
 * `quarantined PATH`. A repository's objects, refs and index are never touched.
 *
 * The walk works on descriptors (openat with O_NOFOLLOW|O_DIRECTORY, no symlink followed), does not enter
 * `.git` directories beyond their control files, and stops after SWEEP_MAX_DIRS directories or
 * SWEEP_MAX_DEPTH levels, reporting `incomplete ROOT` so the driver can say so.
 */
#define _GNU_SOURCE
#include "sweep.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/report.h"
#include "quarantine.h"

#define SWEEP_MAX_DIRS 50000
#define SWEEP_MAX_DEPTH 40

static const char *const CONTROL[] = {"config", "config.worktree", "commondir", "hooks", "info", "modules", "worktrees", NULL};

struct sweep {
  struct timespec start;
  FILE *report;
  long dirs;
  int incomplete;
  /* The root's own .git when it existed at the start: its control files were read-only mounts. */
  dev_t top_dev;
  ino_t top_ino;
  /* Stubs of any run (recorded by the launcher): mount points of running sandboxes, never moved. */
  const struct sweep_skip *skip;
  int nskip;
};

static int skipped(const struct sweep *s, const struct stat *st) {
  for (int i = 0; i < s->nskip; i++)
    if (s->skip[i].dev == st->st_dev && s->skip[i].ino == st->st_ino) return 1;
  return 0;
}

static int changed_since(const struct stat *st, const struct timespec *start) {
  return st->st_ctim.tv_sec > start->tv_sec ||
         (st->st_ctim.tv_sec == start->tv_sec && st->st_ctim.tv_nsec >= start->tv_nsec);
}

static void quarantine(struct sweep *s, int dirfd, const char *name, const char *where) {
  char path[4400];
  snprintf(path, sizeof path, "%s/%s", where, name);
  set_aside(dirfd, name, s->report, path);
}

/* A `.git` directory: its control files that changed during the run go aside. */
static void sweep_git_dir(struct sweep *s, int gitfd, const char *where) {
  for (int i = 0; CONTROL[i] != NULL; i++) {
    struct stat st;
    if (fstatat(gitfd, CONTROL[i], &st, AT_SYMLINK_NOFOLLOW) != 0 || skipped(s, &st)) continue;
    int touched = changed_since(&st, &s->start);
    if (!touched && S_ISDIR(st.st_mode)) {
      /* A file added inside hooks/, modules/, … changes that directory's ctime too, but a file
       * rewritten in place does not: look one level in. */
      int d = openat(gitfd, CONTROL[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      DIR *dir = d >= 0 ? fdopendir(d) : NULL;
      struct dirent *e;
      while (dir != NULL && !touched && (e = readdir(dir)) != NULL) {
        struct stat in;
        if (e->d_name[0] == '.' && (e->d_name[1] == '\0' || (e->d_name[1] == '.' && e->d_name[2] == '\0'))) continue;
        if (fstatat(d, e->d_name, &in, AT_SYMLINK_NOFOLLOW) == 0 && changed_since(&in, &s->start)) touched = 1;
      }
      if (dir != NULL) closedir(dir);
      else if (d >= 0) close(d);
    }
    if (touched) quarantine(s, gitfd, CONTROL[i], where);
  }
}

/* The `.git` entry (of TYPE) of the directory DIRFD at PATH (its first LEN bytes; PATH/.git after them):
 * a git directory's changed control files go aside, and a changed .git file or symlink itself. TOP: DIRFD
 * is the swept root. */
static void sweep_dot_git(struct sweep *s, int dirfd, unsigned char type, char *path, size_t len, int top) {
  const char *n = ".git";
  struct stat st;
  int known = fstatat(dirfd, n, &st, AT_SYMLINK_NOFOLLOW) == 0;
  int protected_top = known && top && st.st_dev == s->top_dev && st.st_ino == s->top_ino;
  if (type == DT_DIR && !protected_top) {
    int g = openat(dirfd, n, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (g >= 0) {
      sweep_git_dir(s, g, path);
      close(g);
    }
  } else if ((type == DT_REG || type == DT_LNK) && known && !protected_top && !skipped(s, &st) &&
             changed_since(&st, &s->start)) {
    /* A .git file names the repository's directory, and git follows a .git symlink: one made during
     * the run could lead to any repository, one the command planted included. */
    path[len] = '\0';
    quarantine(s, dirfd, n, path);
  }
}

static void walk(struct sweep *s, int dirfd, char *path, size_t len, int depth, int top) {
  if (++s->dirs > SWEEP_MAX_DIRS || depth > SWEEP_MAX_DEPTH) {
    s->incomplete = 1;
    return;
  }
  int d = dup(dirfd);
  DIR *dir = d >= 0 ? fdopendir(d) : NULL;
  if (dir == NULL) {
    if (d >= 0) close(d);
    return;
  }
  struct dirent *e;
  /* What makes this directory itself a git directory to git (HEAD, objects/, refs/): a bare repository,
   * or one planted without any .git entry, which git uses when run inside it. */
  int git_marks = 0;
  while ((e = readdir(dir)) != NULL) {
    const char *n = e->d_name;
    if (n[0] == '.' && (n[1] == '\0' || (n[1] == '.' && n[2] == '\0'))) continue;
    if (strcmp(n, "HEAD") == 0) git_marks |= 1;
    else if (strcmp(n, "objects") == 0) git_marks |= 2;
    else if (strcmp(n, "refs") == 0) git_marks |= 4;
    size_t nl = strlen(n);
    if (len + 1 + nl >= 4096) {
      s->incomplete = 1;
      continue;
    }
    path[len] = '/';
    memcpy(path + len + 1, n, nl + 1);
    unsigned char type = e->d_type;
    if (type == DT_UNKNOWN) {
      struct stat st;
      if (fstatat(dirfd, n, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
      type = S_ISDIR(st.st_mode) ? DT_DIR : S_ISREG(st.st_mode) ? DT_REG : S_ISLNK(st.st_mode) ? DT_LNK : DT_UNKNOWN;
    }
    if (strcmp(n, ".git") == 0) {
      sweep_dot_git(s, dirfd, type, path, len, top);
      path[len] = '\0';
      continue;
    }
    if (type == DT_DIR) {
      int c = openat(dirfd, n, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (c >= 0) {
        walk(s, c, path, len + 1 + nl, depth + 1, 0);
        close(c);
      }
    }
    path[len] = '\0';
  }
  closedir(dir);
  path[len] = '\0';
  if (git_marks == 7) sweep_git_dir(s, dirfd, path);
}

void git_sweep(const struct sweep_root *roots, int nroots, const struct timespec *start, FILE *report) {
  struct sweep s = {.start = *start, .report = report};
  char path[4096];
  for (int i = 0; i < nroots; i++) {
    int fd = openat(roots[i].fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) continue;
    snprintf(path, sizeof path, "%s", roots[i].name);
    s.dirs = 0;
    s.incomplete = 0;
    s.top_dev = roots[i].top_dev;
    s.top_ino = roots[i].top_ino;
    s.skip = roots[i].skip;
    s.nskip = roots[i].nskip;
    walk(&s, fd, path, strlen(path), 0, 1);
    close(fd);
    if (s.incomplete) report_line(s.report, "incomplete", roots[i].name, NULL);
  }
}
