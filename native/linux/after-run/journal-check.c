/*
 * The check by the change journal (journal-check.h). Before the run: a fresh group (journal.c) marks the
 * filesystem of every root, and of every mount below a root (a volume inside the workspace has events of
 * its own); a root whose filesystem refuses is walked instead. While the run runs, the group is drained
 * whenever it has events (a short queue), and once PROGRAM is reaped — every process of the run is gone by
 * then — to its end. Then each entry is checked (journal-entry.c), and:
 *   - a git directory the run touched that was not known before the run and whose markers changed may
 *     have become one during it: all of its control entries are set aside;
 *   - every git directory known before the run has its control entries' ctimes looked at: a file rewritten
 *     through a shared mapping has no write event (only a close, which a descriptor parked in a unix socket
 *     can delay past the run), but its ctime moves;
 *   - what the journal cannot vouch for — events lost, a record not understood, a handle that does not
 *     decode, a directory that cannot be placed — sends the roots of that filesystem to the complete walk
 *     (`walked ROOT: why`); what the journal found is acted on all the same.
 */
#define _GNU_SOURCE
#include "journal-check.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../common/report.h"
#include "gitctx.h"
#include "gitdir.h"
#include "journal-entry.h"
#include "journal.h"
#include "quarantine.h"
#include "registry.h"
#include "rules.h"
#include "where.h"
#include "../watcher/watch-proto.h"

struct journal {
  struct journal_log *log;
  const char *why[CHECK_MAX_ROOTS]; /* a root the journal does not cover: why (reported at the check) */
  int root_of[CHECK_MAX_ROOTS];     /* the root whose check covers it, -1 when not the journal */
  char buf[256];
};

/* Marks the filesystems of the mounts below root R (its path a prefix of theirs), from mountinfo. */
static int mark_mounts_below(struct journal *j, const struct check_root *r) {
  FILE *f = fopen("/proc/self/mountinfo", "re");
  if (f == NULL) return -1;
  char line[4096], at[4096];
  size_t len = strlen(r->path);
  int rc = 0;
  while (rc == 0 && fgets(line, sizeof line, f) != NULL) {
    if (sscanf(line, "%*s %*s %*s %*s %4095s", at) != 1) continue;
    if (strncmp(at, r->path, len) != 0 || (at[len] != '/' && !(len == 1 && at[0] == '/')) || at[len] == '\0') continue;
    if (strchr(at, '\\') != NULL) { /* an escaped name: cannot be opened as written, so cannot be vouched for */
      rc = -1;
      break;
    }
    int fd = open(at, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    rc = fd < 0 || journal_mark(j->log, fd) < 0 ? -1 : 0;
    if (fd >= 0) close(fd);
  }
  fclose(f);
  return rc;
}

/* The watcher's begin for the roots not yet decided: each it vouches for is checked by its journal. */
static void watch_roots(struct journal *j, struct check *c) {
  int fds[CHECK_MAX_ROOTS], idx[CHECK_MAX_ROOTS], n = 0;
  unsigned char states[CHECK_MAX_ROOTS];
  for (int i = 0; i < c->nroots; i++)
    if (!c->roots[i].covered && j->why[i] == NULL) {
      idx[n] = i;
      fds[n++] = c->roots[i].fd;
    }
  int answered = n > 0 && journal_watch_begin(j->log, fds, n, states) == 0;
  for (int k = 0; k < n; k++) {
    int i = idx[k];
    if (!answered) j->why[i] = "the change watcher did not answer";
    else if (states[k] == WATCH_SCANNING) j->why[i] = "the change watcher is still marking its directories (a session's first run in it, or after lost events)";
    else if (states[k] == WATCH_TOO_MANY) j->why[i] = "the change watcher cannot mark all of its directories (the user's fanotify mark or open-file limit)";
    else if (states[k] != WATCH_READY) j->why[i] = "the change watcher cannot mark it (a mount or an unreadable directory below it)";
    else if (journal_mark(j->log, c->roots[i].fd) < 0) j->why[i] = "its filesystem could not be told";
    else {
      c->roots[i].method = CHECK_JOURNAL;
      j->root_of[i] = i;
    }
  }
}

struct journal *journal_start(struct check *c, int watch_fd) {
  struct journal *j = calloc(1, sizeof *j);
  if (j == NULL) return NULL;
  j->log = journal_open();
  if (j->log == NULL && watch_fd >= 0) j->log = journal_watched(watch_fd);
  for (int i = 0; i < c->nroots; i++) {
    struct check_root *r = &c->roots[i];
    j->root_of[i] = -1;
    if (r->covered) continue;
    if (j->log == NULL) j->why[i] = "no change journal on this host (fanotify refused, and no change watcher for this run)";
    else if (journal_watching(j->log)) continue; /* decided below, all roots at once */
    else if (journal_mark(j->log, r->fd) < 0) j->why[i] = "its filesystem refuses a change journal (fanotify)";
    else if (mark_mounts_below(j, r) < 0) j->why[i] = "a mount below it refuses a change journal (fanotify)";
    else {
      r->method = CHECK_JOURNAL;
      j->root_of[i] = i;
    }
  }
  if (j->log != NULL && journal_watching(j->log)) watch_roots(j, c);
  for (int i = 0; i < c->nroots; i++)
    if (c->roots[i].covered) j->root_of[i] = c->roots[c->roots[i].cover].method == CHECK_JOURNAL ? c->roots[i].cover : -1;
  return j;
}

int journal_poll_fd(const struct journal *j) {
  return j->log == NULL ? -1 : journal_fd(j->log);
}

void journal_poll_drain(struct journal *j) {
  if (j->log != NULL) journal_drain(j->log);
}

int journal_wait(struct journal *j, pid_t pid) {
  int pidfd = j->log == NULL ? -1 : (int)syscall(SYS_pidfd_open, pid, 0);
  while (pidfd >= 0) {
    struct pollfd fds[2] = {{.fd = journal_fd(j->log), .events = POLLIN}, {.fd = pidfd, .events = POLLIN}};
    if (poll(fds, 2, -1) < 0 && errno != EINTR) break;
    if (fds[0].revents & POLLIN) journal_drain(j->log);
    if (fds[1].revents & POLLIN) break;
  }
  if (pidfd >= 0) close(pidfd);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

/* The roots the journal covered are walked instead (WHY). */
static void fall_back(struct journal *j, struct check *c, const char *why) {
  for (int i = 0; i < c->nroots; i++)
    if (c->roots[i].method == CHECK_JOURNAL) {
      c->roots[i].method = CHECK_NONE;
      j->why[i] = why;
    }
  for (int i = 0; i < c->nroots; i++) j->root_of[i] = -1;
}

/* Every control entry of git directory G set aside (it may have become one during the run). */
static void set_aside_controls(struct check *c, const struct gitdir_info *g) {
  for (int i = 0; GIT_CONTROL[i] != NULL; i++) {
    struct stat st;
    if (fstatat(g->fd, GIT_CONTROL[i], &st, AT_SYMLINK_NOFOLLOW) < 0 || exempt(c, &st)) continue;
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", g->path, GIT_CONTROL[i]);
    set_aside(g->fd, GIT_CONTROL[i], c->report, path);
  }
}

/* The git directories the entries touched: unknown ones whose markers changed lose every control entry;
 * each is known from now on. */
static void decide_git_dirs(struct check *c) {
  struct timespec now;
  clock_gettime(CLOCK_REALTIME_COARSE, &now);
  for (struct gitdir_info *g = gitctx_next(NULL); g != NULL; g = gitctx_next(g)) {
    struct stat st;
    if (g->fd < 0 || !g->touched || g->root < 0 || fstat(g->fd, &st) < 0) continue;
    struct registry *known = c->roots[g->root].known;
    int fresh = !registry_known(known, g->fd, &st, &c->start) && g->markers_changed;
    if (fresh) set_aside_controls(c, g);
    registry_note(known, g->fd, &st, fresh ? &now : &c->start);
  }
}

/* Whether something in directory NAME of FD changed during the run (one level: hooks/ and info/ hold
 * files). */
static int changed_inside(struct check *c, int fd, const char *name) {
  int d = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  DIR *dir = d >= 0 ? fdopendir(d) : NULL;
  if (dir == NULL) {
    if (d >= 0) close(d);
    return 0;
  }
  int changed = 0;
  struct dirent *e;
  while (!changed && (e = readdir(dir)) != NULL) {
    struct stat st;
    if (e->d_name[0] == '.' && (e->d_name[1] == '\0' || (e->d_name[1] == '.' && e->d_name[2] == '\0'))) continue;
    changed = fstatat(dirfd(dir), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && changed_in_run(c, &st) &&
              !exempt(c, &st);
  }
  closedir(dir);
  return changed;
}

/* What a sweep does with one directory of a registry of root R, opened (FD, O_PATH) and placed under R. */
typedef void sweep_fn(struct check *c, int r, int fd);

/* Opens each directory of E (N entries of REG, a registry of root R) by its handle, drops the gone, and
 * hands those placed under R outside the exempt paths to FN; -1 when one cannot be opened for a reason
 * other than being gone. */
static int sweep(struct journal *j, struct check *c, int r, struct registry *reg, const struct registry_entry *e,
                 int n, sweep_fn *fn) {
  int fs = n > 0 ? journal_mark(j->log, c->roots[r].fd) : 0; /* its filesystem's index (marked already) */
  if (fs < 0) return -1;
  for (int i = 0; i < n; i++) {
    int fd = journal_open_handle(j->log, fs, e[i].handle, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0 && errno == ESTALE) registry_drop(reg, &e[i]);
    if (fd < 0 && errno != ESTALE && e[i].dev == c->roots[r].dev) return -1;
    if (fd < 0) continue;
    int in_exempt, at = where_is(c, fd, &in_exempt);
    if (at >= 0 && j->root_of[at] == r && !in_exempt) fn(c, r, fd);
    close(fd);
  }
  return 0;
}

/* A known git directory's control entries, by their ctimes. */
static void sweep_controls(struct check *c, int r, int fd) {
  struct gitdir_info *g = gitctx_of(c, fd, r);
  for (int k = 0; g != NULL && g->fd >= 0 && GIT_CONTROL[k] != NULL; k++) {
    struct stat st;
    const char *name = GIT_CONTROL[k];
    if (fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || exempt(c, &st)) continue;
    if (changed_in_run(c, &st) || (S_ISDIR(st.st_mode) && changed_inside(c, fd, name))) {
      char path[4200];
      snprintf(path, sizeof path, "%s/%s", g->path, name);
      set_aside(fd, name, c->report, path);
    }
  }
}

/* A directory known to hold a `.git` file: set aside when its ctime moved during the run (a rewrite through
 * a shared mapping whose close comes after the run has no event in the run's window). */
static void sweep_gitfile(struct check *c, int r, int fd) {
  (void)r;
  struct stat st;
  if (fstatat(fd, ".git", &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISDIR(st.st_mode) && changed_in_run(c, &st) &&
      !exempt(c, &st)) {
    char path[4200];
    set_aside(fd, ".git", c->report, entry_path(fd, ".git", path, sizeof path));
  }
}

/* The git directories known under root R; -1 when one cannot be opened for a reason other than being gone. */
static int sweep_known(struct journal *j, struct check *c, int r) {
  int n;
  const struct registry_entry *e = registry_entries(c->roots[r].known, &n);
  return sweep(j, c, r, c->roots[r].known, e, n, sweep_controls);
}

/* The directories of root R known to hold a `.git` file, both lists: those the registry file held, and
 * those noted by this process (its first walk's). */
static int sweep_gitfiles(struct journal *j, struct check *c, int r) {
  int n, m;
  struct registry *reg = c->roots[r].gitfiles;
  const struct registry_entry *loaded = registry_entries(reg, &n);
  if (sweep(j, c, r, reg, loaded, n, sweep_gitfile) < 0) return -1;
  const struct registry_entry *noted = registry_noted(reg, &m);
  return sweep(j, c, r, reg, noted, m, sweep_gitfile);
}

void journal_check(struct journal *j, struct check *c) {
  if (j->log != NULL) journal_drain(j->log);
  if (j->log != NULL) journal_fetch(j->log);
  const char *why = j->log == NULL ? NULL : journal_untrusted(j->log);
  if (why != NULL) fall_back(j, c, why);
  for (struct jkey *k = j->log == NULL ? NULL : journal_next(j->log, NULL); why == NULL && k != NULL;
       k = journal_next(j->log, k))
    if (check_entry(c, j->log, k, j->root_of) < 0) {
      why = "the change journal named a directory that could not be opened or placed";
      fall_back(j, c, why);
    }
  if (why == NULL) decide_git_dirs(c);
  for (int r = 0; why == NULL && r < c->nroots; r++)
    if (c->roots[r].method == CHECK_JOURNAL && sweep_known(j, c, r) < 0) {
      why = "a known git directory could not be opened";
      fall_back(j, c, why);
    }
  for (int r = 0; why == NULL && r < c->nroots; r++)
    if (c->roots[r].method == CHECK_JOURNAL && sweep_gitfiles(j, c, r) < 0) {
      why = "a directory known to hold a .git file could not be opened";
      fall_back(j, c, why);
    }
  for (int r = 0; r < c->nroots; r++) {
    if (c->roots[r].method == CHECK_JOURNAL) {
      registry_save(c->roots[r].known, 0);
      registry_save(c->roots[r].gitfiles, 0);
    }
    else if (j->why[r] != NULL) report_line(c->report, "walked", c->roots[r].path, j->why[r]);
  }
  gitctx_forget();
}
