/*
 * The check after the run (check.h). For every writable root, what the run created or changed is found
 * completely — by the change journal on a host that can keep one (journal-check.c), or by the complete
 * walk (check-walk.c) — and checked:
 *   - git directories as git takes them (gitdir.c), at any depth: the control entries (config, hooks, info,
 *     commondir, gitdir, config.worktree) the run wrote, or all of them when the directory may have
 *     become a git directory during the run, set aside; a `.git` file or symlink it wrote, set aside;
 *   - set-id bits cleared on what it created or changed; symlinks it left that lead out of the roots,
 *     reported (rules.c, symlink-out.c);
 *   - what cannot be examined, set aside whole.
 * What was mounted read-only for the run is exempt. Protected paths absent at the start are set aside when
 * they exist after it (absent.c). What is set aside goes to the session's quarantine (quarantine.c).
 * Where the journal checked a root, the gitlinks and .gitmodules of its repository, when the run changed
 * them, are followed (gitlinks.c). Roots beneath another root are checked with it. Each root's known git
 * directories (registry.c) are found by a walk before the run the first time, when none is kept.
 */
#define _GNU_SOURCE
#include "check.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../common/paths.h"
#include "../common/report.h"
#include "absent.h"
#include "check-types.h"
#include "check-walk.h"
#include "gitlinks.h"
#include "journal-check.h"
#include "registry.h"
#include "where.h"

static struct check chk = {.state_fd = -1};
static int use_journal;
static int watch_fd = -1;
static struct journal *journal;

void check_root(int fd, const char *path) {
  if (chk.nroots >= CHECK_MAX_ROOTS) return;
  struct check_root *r = &chk.roots[chk.nroots];
  struct stat st;
  r->fd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (r->fd < 0 || fstat(r->fd, &st) < 0) return;
  r->path = path;
  r->dev = st.st_dev;
  r->ino = st.st_ino;
  chk.nroots++;
}

void check_exempt(const struct stat *st) {
  if (chk.nexempt >= CHECK_MAX_EXEMPT) return;
  chk.exempt_dev[chk.nexempt] = st->st_dev;
  chk.exempt_ino[chk.nexempt++] = st->st_ino;
}

void check_use_journal(void) { use_journal = 1; }

void check_use_watcher(int fd) { watch_fd = fd; }

/* Roots beneath another root (a grant inside the workspace, a root named twice) are checked with it. */
static void mark_covered(void) {
  for (int i = 0; i < chk.nroots; i++) {
    for (int j = 0; j < i; j++)
      if (chk.roots[j].dev == chk.roots[i].dev && chk.roots[j].ino == chk.roots[i].ino) {
        chk.roots[i].covered = 1;
        chk.roots[i].cover = j;
      }
    if (chk.roots[i].covered) continue;
    int up = openat(chk.roots[i].fd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (up >= 0) {
      int r = where_is(&chk, up, NULL);
      chk.roots[i].covered = r >= 0 && r != i;
      chk.roots[i].cover = r;
      close(up);
    }
  }
  for (int i = 0; i < chk.nroots; i++)
    for (int hops = 0; chk.roots[i].covered && chk.roots[chk.roots[i].cover].covered && hops < CHECK_MAX_ROOTS; hops++)
      chk.roots[i].cover = chk.roots[chk.roots[i].cover].cover;
  where_forget(&chk);
}

void check_prepare(int state_fd) {
  chk.state_fd = state_fd;
  mark_covered();
  clock_gettime(CLOCK_REALTIME_COARSE, &chk.start);
  for (int i = 0; i < chk.nroots; i++) {
    struct check_root *r = &chk.roots[i];
    if (r->covered) continue;
    struct stat st;
    int found = 0;
    int found_files = 0;
    if (fstat(r->fd, &st) == 0) {
      r->known = registry_open(state_fd, &st, &found);
      r->gitfiles = registry_open_named(state_fd, "gitfiles", &st, &found_files);
    }
    /* The first check of a root: its git directories (and `.git` files) as they are before the run. */
    if ((!found || !found_files) && r->known != NULL) discover_git_dirs(&chk, i);
  }
  if (use_journal) journal = journal_start(&chk, watch_fd);
}

int check_poll_fd(void) {
  return journal == NULL ? -1 : journal_poll_fd(journal);
}

void check_poll_ready(void) {
  if (journal != NULL) journal_poll_drain(journal);
}

int check_wait(pid_t pid) {
  if (journal != NULL) return journal_wait(journal, pid);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

void check_each_root(void (*fn)(const char *path, dev_t dev, ino_t ino, void *ctx), void *ctx) {
  for (int i = 0; i < chk.nroots; i++)
    if (!chk.roots[i].covered) fn(chk.roots[i].path, chk.roots[i].dev, chk.roots[i].ino, ctx);
}

int check_earlier(int state_fd, const char *path, const struct timespec *since, FILE *report, const char **why) {
  static struct check e;
  memset(&e, 0, sizeof e);
  e.state_fd = state_fd;
  e.start = *since;
  e.report = report;
  int p = open_path(AT_FDCWD, path, RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
  if (p < 0 && (errno == ENOENT || errno == ENOTDIR)) return 0; /* gone, and what it held with it */
  *why = p < 0 ? open_path_why(errno) : strerror(errno);
  struct check_root *r = &e.roots[0];
  r->fd = p < 0 ? -1 : openat(p, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (p >= 0) close(p);
  struct stat st;
  if (r->fd < 0 || fstat(r->fd, &st) < 0) {
    if (p >= 0) *why = strerror(errno);
    if (r->fd >= 0) close(r->fd);
    return -1;
  }
  *why = "it could not be walked whole (unreadable, or it kept changing)";
  r->path = path;
  r->dev = st.st_dev;
  r->ino = st.st_ino;
  r->method = CHECK_WALK;
  e.nroots = 1;
  int found = 0;
  r->known = registry_open(state_fd, &st, &found);
  int rc = check_tree(&e, 0, r->fd, path);
  registry_save(r->known, rc == 0);
  registry_free(r->known);
  where_forget(&e);
  close(r->fd);
  if (report != NULL) fflush(report);
  return rc;
}

void check_after(const struct timespec *start, FILE *report) {
  chk.start = *start;
  chk.report = report;
  absent_check(report);
  if (journal != NULL) journal_check(journal, &chk);
  for (int i = 0; i < chk.nroots; i++)
    if (chk.roots[i].method == CHECK_JOURNAL && check_gitlinks(&chk, i) < 0) {
      /* What the index points at cannot be told: the root is walked whole. */
      report_line(report, "walked", chk.roots[i].path, "its repository's index could not be read or parsed");
      chk.roots[i].method = CHECK_NONE;
    }
  for (int i = 0; i < chk.nroots; i++) {
    struct check_root *r = &chk.roots[i];
    if (r->covered || r->method == CHECK_JOURNAL) continue;
    r->method = CHECK_WALK;
    int whole = check_tree(&chk, i, r->fd, r->path) == 0;
    registry_save(r->known, whole);
    registry_save(r->gitfiles, whole);
  }
  for (int i = 0; i < chk.nroots; i++) {
    registry_free(chk.roots[i].known);
    registry_free(chk.roots[i].gitfiles);
  }
  where_forget(&chk);
  if (report != NULL) fflush(report);
}
