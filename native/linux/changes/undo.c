/* The undo executor's reading, checking and result (undo.h). */
#define _GNU_SOURCE
#include "undo.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/errors.h"
#include "../common/paths.h"
#include "undo-apply.h"
#include "undo-run.h"

/* One line of `states` into R. */
static void read_line(struct undo_run *r, char *line, int *ok) {
  char *p = line;
  int k, n = 0;
  if (sscanf(line, "root %d %n", &k, &n) == 1 && k == r->nroots && k < 64) {
    p += n;
    r->root_path[r->nroots++] = name_read(&p);
  } else if (strncmp(line, "recorded 0", 10) == 0 || strncmp(line, "undoable 0", 10) == 0) {
    *ok = 0;
  } else if (strncmp(line, "entry ", 6) == 0) {
    struct undo_entry e = {.source = -1};
    if (sscanf(line, "entry %d %d %d %n", &e.root, &e.blob, &e.linked, &n) < 3) die("undo: a malformed entry");
    p += n;
    e.rel = name_read(&p);
    if (e.rel == NULL || e.root < 0 || e.root >= r->nroots || state_read(&p, &e.before) < 0 || state_read(&p, &e.after) < 0)
      die("undo: a malformed entry");
    state_read_birth(&p, &e.before);
    state_read_birth(&p, &e.after);
    while (*p == ' ') p++;
    if (strncmp(p, ">-", 2) == 0) e.gone = 1;
    else if (*p == '>' && (p++, (e.now_rel = name_read(&p)) == NULL)) die("undo: a malformed entry");
    struct undo_entry *grown = realloc(r->e, (size_t)(r->n + 1) * sizeof *grown);
    if (grown == NULL) die("out of memory");
    r->e = grown;
    r->e[r->n++] = e;
  }
}

/* Reads DIR/states into R; dies when it is missing or says the run cannot be undone. */
static void read_run(int dir, struct undo_run *r) {
  int fd = openat(dir, "states", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  FILE *f = fd < 0 ? NULL : fdopen(fd, "r");
  if (f == NULL) die("undo: the run's change store has no states: %s", strerror(errno));
  char *line = NULL;
  size_t cap = 0;
  int ok = 1;
  while (getline(&line, &cap, f) > 0) read_line(r, line, &ok);
  free(line);
  fclose(f);
  if (!ok) die("undo: this run's changes were not kept whole");
  for (int k = 0; k < r->nroots; k++) {
    int p = open_path(AT_FDCWD, r->root_path[k], RESOLVE_NO_SYMLINKS);
    r->root_fd[k] = p < 0 ? -1 : openat(p, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (p >= 0) close(p);
  }
  r->blobs = openat(dir, "blobs", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

/* Whether ROOT/REL is PATH or beneath it. */
static int at_or_beneath(const char *root, const char *rel, const char *path) {
  size_t n = strlen(root);
  if (strncmp(path, root, n) != 0) return 0;
  const char *p = path + n;
  if (*p == '\0') return 1; /* the root itself was set aside */
  if (*p++ != '/') return 0;
  size_t m = strlen(p);
  return strncmp(rel, p, m) == 0 && (rel[m] == '\0' || rel[m] == '/');
}

/* The paths the check after the run set aside (DIR/set-aside, written by the driver: absolute host paths,
 * each ended by a NUL): the run left nothing there, so an entry at or beneath one has nothing after the
 * run; undo then only puts its before-state back. */
static void read_set_aside(int dir, struct undo_run *r) {
  int fd = openat(dir, "set-aside", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  FILE *f = fd < 0 ? NULL : fdopen(fd, "r");
  if (f == NULL) return;
  char *path = NULL;
  size_t cap = 0;
  while (getdelim(&path, &cap, '\0', f) > 0)
    for (int i = 0; i < r->n; i++)
      if (at_or_beneath(r->root_path[r->e[i].root], undo_now_rel(&r->e[i]), path)) {
        free(r->e[i].after.target);
        memset(&r->e[i].after, 0, sizeof r->e[i].after);
        r->e[i].after.type = '-';
      }
  free(path);
  fclose(f);
}

/* Each entry's state now, checked against the run's after-state; a conflict for each that differs. */
static void check_run(struct undo_run *r) {
  for (int i = 0; i < r->n; i++) {
    struct undo_entry *e = &r->e[i];
    const char *name;
    int pfd = e->gone ? (errno = ENOENT, -1) : undo_parent_now(r, e, &name);
    if (pfd < 0) e->now.type = errno == ENOENT || errno == ENOTDIR ? '-' : '?';
    else state_of(pfd, name, &e->now);
    if (pfd >= 0) close(pfd);
    if (state_same_but_ctime(&e->now, &e->after)) continue;
    const char *why = e->now.type != e->after.type
                          ? (e->now.type == '-' ? "removed after the run" : e->after.type == '-' ? "created after the run" : "replaced after the run")
                      : !state_same_object(&e->now, &e->after) ? "replaced after the run"
                      : e->now.mode != e->after.mode || e->now.uid != e->after.uid || e->now.gid != e->after.gid
                          ? "mode or owner changed after the run"
                          : "changed after the run";
    undo_failed(r, e, why);
  }
}

/* Writes the result: RESTORED and REMOVED are the entries that were (or, dry, would be) put back; PARTIAL
 * when the undo was carried out and some of them could not be (its conflicts say which). */
static void print_result(const struct undo_run *r, int undone, int partial) {
  printf("{\"undone\":%s,\"partial\":%s,\"restored\":[", undone ? "true" : "false", partial ? "true" : "false");
  int first = 1;
  for (int pass = 0; pass < 2; pass++) {
    if (pass == 1) printf("],\"removed\":[");
    first = 1;
    for (int i = 0; i < r->n; i++) {
      const struct undo_entry *e = &r->e[i];
      if ((e->before.type == '-') != pass) continue;
      printf("%s", first ? "" : ",");
      first = 0;
      undo_json_path(stdout, r, e, pass == 1); /* restored: by its name before; removed: where it was */
    }
  }
  printf("],\"conflicts\":[%s]}\n", undo_conflicts_text());
}

int undo_main(int argc, char **argv) {
  if (argc < 3) die("usage: --undo DIR [--force] [--dry-run]");
  int force = 0, dry = 0;
  for (int i = 3; i < argc; i++) {
    if (strcmp(argv[i], "--force") == 0) force = 1;
    else if (strcmp(argv[i], "--dry-run") == 0) dry = 1;
    else die("undo: unknown option %s", argv[i]);
  }
  int p = open_path(AT_FDCWD, argv[2], RESOLVE_NO_SYMLINKS);
  int dir = p < 0 ? -1 : openat(p, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) die("undo: cannot open the change store %s: %s", argv[2], p < 0 ? open_path_why(errno) : strerror(errno));
  undo_conflicts_reset();
  static struct undo_run r;
  read_run(dir, &r);
  read_set_aside(dir, &r);
  check_run(&r);
  int refused = undo_nconflicts() > 0 && !force;
  if (!refused && !dry) {
    undo_conflicts_reset();
    undo_apply(&r);
  }
  int applied = !refused && !dry;
  print_result(&r, applied && undo_nconflicts() == 0, applied && undo_nconflicts() > 0);
  return refused || undo_nconflicts() > 0 ? 1 : 0;
}
