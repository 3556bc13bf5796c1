/*
 * One entry of the change journal (journal-entry.h). The directory's handle is opened through the
 * filesystem's descriptor (ESTALE: the directory is gone, and a gone directory holds nothing), placed by
 * where.c (outside every root, or inside a read-only path: not this check's), and its standing among git
 * directories found (gitctx.c). Then, on what is there now:
 *   - inside a control entry of a git directory: the control entry is set aside;
 *   - a control entry of a git directory: set aside; a marker (HEAD, objects, refs, commondir): the git
 *     directory may have become one now (decided once every entry is read, journal-check.c);
 *   - a `.git` file or symlink: set aside;
 *   - a directory moved in: its old contents have no events, so it is walked (check-walk.c);
 *   - a file: set-id bits cleared, a symlink's target placed (rules.c); and every object the events named
 *     is looked at by its handle, so a set-id inode is found whatever its name now.
 */
#define _GNU_SOURCE
#include "journal-entry.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/fanotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/report.h"
#include "check-walk.h"
#include "gitctx.h"
#include "gitdir.h"
#include "quarantine.h"
#include "registry.h"
#include "rules.h"
#include "where.h"
#include "../watcher/watch-proto.h"

const char *entry_path(int fd, const char *name, char *out, size_t size) {
  char proc[64];
  snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
  ssize_t n = readlink(proc, out, size - 1);
  if (n < 0) n = snprintf(out, size, "(a directory no longer reachable)");
  out[n] = '\0';
  if (name[0] != '\0' && (size_t)n + 1 + strlen(name) < size) {
    out[n] = '/';
    strcpy(out + n + 1, name);
  }
  return out;
}

/* Set-id bits of the inodes the events named, whatever their names now (ST: the entry's own, done). */
static void check_objects(struct check *c, struct journal_log *log, const struct jkey *k, const struct stat *st, const char *path) {
  if (journal_watching(log)) return; /* the watcher keeps directories only: the entries are checked by name */
  for (const struct jobj *o = k->objs; o != NULL; o = o->next) {
    int fd = journal_open_handle(log, k->fs, o->fh, O_PATH | O_CLOEXEC);
    struct stat ost;
    if (fd >= 0 && fstat(fd, &ost) == 0 && !S_ISDIR(ost.st_mode) && !S_ISLNK(ost.st_mode) &&
        (ost.st_mode & (S_ISUID | S_ISGID)) != 0 && !exempt(c, &ost) &&
        (st == NULL || ost.st_ino != st->st_ino || ost.st_dev != st->st_dev)) {
      char shown[4400];
      snprintf(shown, sizeof shown, "%s (inode %llu)", path, (unsigned long long)ost.st_ino);
      if (clear_setid_fd(c, fd, shown) < 0) report_line(c->report, "failed", shown, "its set-id bits could not be cleared");
    }
    if (fd >= 0) close(fd);
  }
}

/* Whether directory entry K (in directory DFD) is to be walked: moved in (its old contents have no
 * events); or, with the watcher, made during the run and unmarked at first (what was made in it before its
 * mark has no events) — unless its own directory was made during the run too, whose walk covers it. */
static int moved_in_or_unmarked(const struct journal_log *log, const struct jkey *k, int dfd) {
  (void)dfd;
  if (!journal_watching(log)) return (k->mask & FAN_MOVED_TO) != 0;
  if ((k->mask & (FAN_MOVED_TO | FAN_CREATE)) == 0) return 0;
  return !journal_made_dir(log, k->dfh, k->dlen);
}

/* The rules for entry K, named NAME in directory DFD (its standing G) of root ROOT. */
static void check_named(struct check *c, int dfd, struct gitdir_info *g, const struct jkey *k, int root, struct journal_log *log) {
  char path[4400];
  const char *name = k->name;
  struct stat swept;
  /* A `.git` file the watcher only swept (no event of the run named it): looked at when its ctime says it
   * changed during the run (a rewrite through a shared mapping whose close came after the run). */
  if ((k->mask & ~WATCH_SWEEP) == 0 && (fstatat(dfd, name, &swept, AT_SYMLINK_NOFOLLOW) < 0 || !changed_in_run(c, &swept)))
    return;
  int gitlike = git_dir_like(g->marks);
  if (gitlike) {
    g->touched = 1;
    if (git_marker(name) != 0) g->markers_changed = 1;
  }
  struct stat st;
  if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
    if (errno != ENOENT) hostile(c, dfd, name, entry_path(dfd, name, path, sizeof path), errno);
    else check_objects(c, log, k, NULL, entry_path(dfd, name, path, sizeof path));
    return;
  }
  if (exempt(c, &st)) return;
  struct stat dst;
  if (!S_ISDIR(st.st_mode) && strcmp(name, ".git") == 0 && fstat(dfd, &dst) == 0)
    registry_note(c->roots[root].gitfiles, dfd, &dst, &c->start); /* swept by ctime from now on */
  entry_path(dfd, name, path, sizeof path);
  if ((gitlike && git_control(name)) || (strcmp(name, ".git") == 0 && !S_ISDIR(st.st_mode))) {
    set_aside(dfd, name, c->report, path);
    return;
  }
  if (S_ISDIR(st.st_mode)) {
    if (!moved_in_or_unmarked(log, k, dfd)) return; /* made during the run: what it holds has events of its own */
    int sub = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (sub < 0) hostile(c, dfd, name, path, errno);
    else {
      check_tree(c, root, sub, path);
      close(sub);
    }
    return;
  }
  check_changed_file(c, dfd, name, &st, path);
  check_objects(c, log, k, &st, path);
}

int check_entry(struct check *c, struct journal_log *log, struct jkey *k, const int *root_of) {
  /* With the watcher, a directory made during the run is walked whole (moved_in_or_unmarked): its entries
   * need no look of their own. */
  if (journal_watching(log) && journal_made_dir(log, k->dfh, k->dlen)) return 0;
  int dfd = journal_open_handle(log, k->fs, k->dfh, O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return errno == ESTALE ? 0 : -1;
  int in_exempt, rc = 0;
  int root = where_is(c, dfd, &in_exempt);
  if (root == WHERE_UNKNOWN) rc = -1;
  else if (root >= 0 && !in_exempt && root_of[root] >= 0) {
    root = root_of[root];
    struct gitdir_info *g = gitctx_of(c, dfd, root);
    if (g == NULL) rc = -1;
    else if (g->ctl != NULL) {
      if (!g->ctl->done) set_aside(g->ctl->fd, g->ctl->name, c->report, g->ctl->path);
      g->ctl->done = 1;
    } else if (k->name[0] != '\0') {
      check_named(c, dfd, g, k, root, log);
    }
  }
  close(dfd);
  return rc;
}
