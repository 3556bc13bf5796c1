/*
 * The guard of tier 3's protected paths (guard.h), run by the launcher's supervisor (`--guard ROOT REL`).
 *
 * Without a mount namespace the protected paths inside a writable root (.git/hooks, .git/config, .envrc,
 * .aleph, …) cannot be read-only: Landlock cannot exempt a sub-path of a granted one. They are checked
 * instead. Before the command starts, each is recorded in a snapshot under --state (`guard-DEV-INO.manifest`
 * and a copy of every file and symlink target in `guard-DEV-INO.data`): what exists, its type, mode,
 * owner, inode and ctime. After the command and everything it left behind are gone, each protected path that differs from
 * its snapshot is renamed aside (`NAME.aleph-quarantined[-N]`, reported `quarantined PATH`) and rebuilt
 * from the copy (`restored PATH`); one that did not exist and does now is only renamed aside. Host tools
 * never read what the command planted there after the run; a host process reading them during it can.
 *
 * Units: a protected path is compared and swapped whole (a hook added to .git/hooks swaps the directory),
 * except the containers .git/modules and .git/worktrees, whose git directories hold the repositories'
 * data: there, each git directory's control entries (config, config.worktree, commondir, gitdir, hooks,
 * info, and its own modules and worktrees) are units, and an entry that was not there before (a new git
 * directory) is renamed aside. Objects, refs and indexes are never compared nor touched.
 *
 * Descriptors only: the root is the launcher's O_PATH descriptor, paths below it are resolved with
 * RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS, and everything is created with O_EXCL, mkdirat or symlinkat
 * beneath a directory so opened, under a temporary name renamed into place with RENAME_NOREPLACE. A
 * directory on the way to a protected path that is now a symlink or a file, and changed since the
 * snapshot, is renamed aside (git, direnv and editors would follow it).
 *
 * Sharing: the snapshot belongs to the root, under the launcher's per-root locks. The first run using a
 * root takes it; runs starting while another runs reuse it (so none records another's planted content as
 * the original); each run checks against it when it ends; the last one empties it (the two files stay, so
 * a run creates and removes no file there: on this machine's file system each costs a quarter of a
 * millisecond). A snapshot a killed launcher left is checked when the next run using the root starts.
 *
 * Bounds: a root's snapshot keeps at most GUARD_MAX_ENTRIES entries and GUARD_MAX_BYTES of content. A
 * protected path beyond them is not kept: after the run, each entry of it whose ctime is not older than
 * the snapshot is renamed aside on its own (`unrestored PATH: …` says the originals are not put back).
 *
 * Files: this one, the guard's life (made, prepared under the root's lock, checked, discarded);
 * guard-snapshot.c takes the snapshot, guard-manifest.c keeps it on disk, guard-check.c checks against it,
 * guard-tree.c has the tools they share, guard-types.h the structures.
 */
#define _GNU_SOURCE
#include "guard.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../common/errors.h"
#include "guard-check.h"
#include "guard-manifest.h"
#include "guard-snapshot.h"
#include "guard-tree.h"
#include "guard-types.h"

struct guard *guard_new(int rootfd, const char *root, dev_t dev, ino_t ino) {
  struct guard *g = calloc(1, sizeof *g);
  if (g == NULL) die("out of memory");
  g->rootfd = rootfd;
  g->root = root;
  g->manifestfd = g->datafd = -1;
  snprintf(g->key, sizeof g->key, "guard-%llx-%llx", (unsigned long long)dev, (unsigned long long)ino);
  return g;
}

void guard_path(struct guard *g, const char *rel) {
  if (rel[0] == '\0' || rel[0] == '/' || strstr(rel, "..") != NULL || strlen(rel) >= 1024)
    die("launch: --guard %s: not a relative path below the root", rel);
  if (g->npaths >= GUARD_MAX_PATHS) die("launch: too many --guard paths");
  g->paths[g->npaths++] = rel;
}

static int holds(const struct guard *g, const char *rel) {
  for (int i = 0; i < g->ntops; i++)
    if (strcmp(g->tops[i], rel) == 0) return 1;
  return 0;
}

void guard_check(struct guard *g, FILE *report) {
  if (g->manifestfd < 0) return;
  snprintf(g->gone, sizeof g->gone, "\n"); /* no directory reported yet */
  for (int i = 0; i < g->nunits; i++) check_unit(g, &g->units[i], report);
  if (report != NULL) fflush(report);
}

void guard_prepare(struct guard *g, int state_fd, int fresh, FILE *report) {
  manifest_open(g, state_fd);
  int loaded = manifest_load(g);
  if (loaded && fresh) {
    /* Left by a launcher that was killed before it checked: its command's changes are undone first. */
    guard_check(g, report);
    loaded = 0;
  }
  if (!loaded) {
    manifest_wipe(g);
    clock_gettime(CLOCK_REALTIME_COARSE, &g->taken); /* ctimes come from the same coarse clock */
  }
  int units = g->nunits, tops = g->ntops;
  for (int i = 0; i < g->npaths; i++)
    if (!holds(g, g->paths[i])) snap_top(g, g->paths[i]);
  if (!loaded) manifest_save(g, 0, 0, 1);
  else if (g->ntops > tops) manifest_save(g, units, tops, 0);
  link_entries(g);
}

void guard_each_whole(const struct guard *g, void (*each)(const struct stat *st)) {
  for (int i = 0; i < g->nunits; i++) {
    const struct gunit *u = &g->units[i];
    const char *base;
    struct stat st;
    if (u->kind != 'p' || !u->present) continue;
    int pfd = open_parent(g, u->rel, &base);
    if (pfd >= 0 && fstatat(pfd, base, &st, AT_SYMLINK_NOFOLLOW) == 0) each(&st);
    if (pfd >= 0) close(pfd);
  }
}

void guard_discard(struct guard *g, int state_fd) {
  if (g->manifestfd < 0) return;
  manifest_wipe(g);
  manifest_remove(g, state_fd);
}
