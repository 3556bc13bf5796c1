/*
 * The check by the complete walk (check-walk.h), on walk.c. Per directory, once its listing is read: is it
 * a git directory (gitdir.c), and then are its control entries checked one by one (GIT_EACH: a directory
 * known as a git directory before the run, registry.c) or all set aside (GIT_ALL: one that may have become
 * a git directory during the run — unknown, and it or one of its markers changed since the start)?
 * Per entry:
 *   - one of the paths read-only during the run: skipped, with everything below it;
 *   - a control entry of a git directory: set aside when GIT_ALL, or when it or anything below it (hooks/,
 *     info/) changed during the run;
 *   - a `.git` file or symlink that changed: set aside (it can name any repository);
 *   - a changed file: set-id bits cleared; a changed symlink: where it leads reported (rules.c);
 *   - what cannot be stat'ed or read: set aside whole (hostile by default).
 * walk_dir.data: [0] the directory's GIT_* mode; [1] the depth + 1 of the control entry it lies in (0:
 * none); [2] that control entry changed; [3] its entries could not be stat'ed (set aside on leaving).
 */
#define _GNU_SOURCE
#include "check-walk.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>

#include "../common/report.h"
#include "gitdir.h"
#include "quarantine.h"
#include "registry.h"
#include "rules.h"
#include "walk.h"

struct walk_ctx {
  struct check *c;
  int root;
  int discover; /* only note the git directories (before the run) */
};

/* Whether a marker of D (a git directory) changed during the run: it may have become one then. */
static int markers_changed(struct check *c, int fd) {
  static const char *const names[] = {"HEAD", "objects", "refs", "commondir"};
  for (int i = 0; i < 4; i++) {
    struct stat st;
    if (fstatat(fd, names[i], &st, AT_SYMLINK_NOFOLLOW) == 0 && changed_in_run(c, &st)) return 1;
  }
  return 0;
}

static void enter(struct walk *w, struct walk_dir *d, void *ctx) {
  struct walk_ctx *x = ctx;
  struct walk_dir *p = walk_parent(w, d);
  if (p != NULL && p->data[1] != 0) {
    d->data[1] = p->data[1]; /* inside a control entry */
    return;
  }
  if (p != NULL && p->data[0] != GIT_NONE && git_control(d->name)) {
    d->data[1] = walk_depth(w, d) + 1; /* a control entry itself (hooks/, info/) */
    return;
  }
  int marks = 0;
  for (size_t at = 0; at < d->nlen; at += strlen(d->names + at + 1) + 2) marks |= git_marker(d->names + at + 1);
  if (!git_dir_like(marks)) return;
  struct check *c = x->c;
  struct registry *known = c->roots[x->root].known;
  int fd = walk_fd(w, d);
  if (x->discover) {
    /* Before the run (its start is later): known from before it. */
    struct timespec since = c->start;
    if (since.tv_nsec > 0) since.tv_nsec--;
    else since.tv_sec--, since.tv_nsec = 999999999;
    registry_note(known, fd, &d->st, &since);
    return;
  }
  if (registry_known(known, fd, &d->st, &c->start)) {
    d->data[0] = GIT_EACH;
    registry_note(known, fd, &d->st, &c->start);
    return;
  }
  int fresh = changed_in_run(c, &d->st) || markers_changed(c, fd);
  d->data[0] = fresh ? GIT_ALL : GIT_EACH;
  struct timespec now;
  clock_gettime(CLOCK_REALTIME_COARSE, &now);
  registry_note(known, fd, &d->st, fresh ? &now : &c->start);
}

/* An entry of a control entry's subtree (D lies in it): a change marks the control entry for setting
 * aside; no need to look further once it is marked. */
static int in_control(struct walk *w, struct walk_dir *d, const struct stat *st, struct check *c) {
  struct walk_dir *ctl = walk_at(w, (int)d->data[1] - 1);
  if (ctl->data[2]) return 0;
  if (changed_in_run(c, st)) {
    ctl->data[2] = 1;
    return 0;
  }
  return S_ISDIR(st->st_mode);
}

static int entry(struct walk *w, struct walk_dir *d, const char *name, const struct stat *st, int e, void *ctx) {
  struct check *c = ((struct walk_ctx *)ctx)->c;
  int fd = walk_fd(w, d);
  if (st != NULL && !S_ISDIR(st->st_mode) && strcmp(name, ".git") == 0) {
    /* A pointer to a git directory: its directory is swept by ctime after a journal's runs. */
    struct timespec since = c->start;
    registry_note(c->roots[((struct walk_ctx *)ctx)->root].gitfiles, fd, &d->st, &since);
  }
  if (((struct walk_ctx *)ctx)->discover) return st != NULL && S_ISDIR(st->st_mode);
  if (st == NULL) {
    d->data[3] = 1; /* its entries cannot be stat'ed: the directory goes whole */
    (void)e;
    return 0;
  }
  if (exempt(c, st)) return 0;
  if (d->data[1] != 0) return in_control(w, d, st, c);
  int changed = changed_in_run(c, st);
  if (d->data[0] != GIT_NONE && git_control(name)) {
    if (d->data[0] == GIT_ALL || changed) {
      set_aside(fd, name, c->report, walk_path(w, d, name));
      return 0;
    }
    return S_ISDIR(st->st_mode); /* hooks/, info/: looked into */
  }
  if (S_ISDIR(st->st_mode)) return 1;
  if (!changed) return 0;
  if (strcmp(name, ".git") == 0) set_aside(fd, name, c->report, walk_path(w, d, name));
  else check_changed_file(c, fd, name, st, walk_path(w, d, name));
  return 0;
}

static void unreadable(struct walk *w, struct walk_dir *d, const char *name, int e, void *ctx) {
  struct check *c = ((struct walk_ctx *)ctx)->c;
  if (((struct walk_ctx *)ctx)->discover) return;
  hostile(c, walk_fd(w, d), name, walk_path(w, d, name), e);
}

static void leave(struct walk *w, struct walk_dir *d, struct walk_dir *p, void *ctx) {
  struct check *c = ((struct walk_ctx *)ctx)->c;
  if (((struct walk_ctx *)ctx)->discover) return;
  if (p == NULL) {
    if (d->data[3]) report_line(c->report, "incomplete", walk_path(w, d, NULL), "its entries could not be examined");
    return;
  }
  int fd = walk_fd(w, p);
  if (d->data[3]) hostile(c, fd, d->name, walk_path(w, p, d->name), EACCES);
  else if (d->data[1] == walk_depth(w, d) + 1 && d->data[2]) set_aside(fd, d->name, c->report, walk_path(w, p, d->name));
}

int check_tree(struct check *c, int root, int dirfd, const char *path) {
  static const struct walk_ops ops = {.enter = enter, .entry = entry, .unreadable = unreadable, .leave = leave};
  struct walk_ctx x = {.c = c, .root = root};
  for (int tries = 0; tries < 3; tries++)
    if (walk_tree(dirfd, path, NULL, &ops, &x) == 0) return 0;
  report_line(c->report, "incomplete", path, "it could not be walked whole (unreadable, or it kept changing)");
  return -1;
}

void discover_git_dirs(struct check *c, int root) {
  static const struct walk_ops ops = {.enter = enter, .entry = entry, .unreadable = unreadable, .leave = leave};
  struct walk_ctx x = {.c = c, .root = root, .discover = 1};
  if (walk_tree(c->roots[root].fd, c->roots[root].path, NULL, &ops, &x) == 0) {
    registry_save(c->roots[root].known, 1);
    registry_save(c->roots[root].gitfiles, 1);
  }
}
