/* A run's change store (store.h): the touched paths, their before-states and pre-run copies. */
#define _GNU_SOURCE
#include "store.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/errors.h"
#include "../common/paths.h"
#include "copy.h"
#include "moves.h"
#include "state.h"
#include "tallies.h"

#define MAX_CHANGE_ROOTS 64
#define MAX_TOUCHED 2000000 /* paths a run may touch, about 200 bytes each here */
#define MAX_TOUCHED_WORDS "2,000,000"

struct touched {
  int root;
  char *rel; /* the name before the run (moves.h); of an object the run made, a key no such name has */
  char *at;  /* the name it was touched by, where that differs */
  int epoch; /* the moves done when it was touched */
  int fresh; /* made during the run (in a directory made or moved in from outside the roots) */
  char *now; /* after the run: where it is, where that differs from rel */
  int gone;  /* after the run: a move replaced or took away where it was */
  struct path_state before, after;
  int blob; /* its copy is blobs/N (0: none) */
  int linked; /* the copy is the inode itself, linked */
};


static struct {
  int dirfd, blobs;
  long long max_bytes, max_file, used;
  struct { int fd; char *path; } roots[MAX_CHANGE_ROOTS];
  int nroots;
  struct touched *t;
  size_t n, cap;
  size_t *index; /* open addressing: entry + 1, 0 empty */
  size_t index_cap;
  char *unrecorded, *unundoable;
  int nblobs;
} st = {.dirfd = -1, .blobs = -1};

void store_open(const char *dir, long long max_bytes, long long max_file) {
  st.dirfd = open_path(AT_FDCWD, dir, RESOLVE_NO_SYMLINKS);
  if (st.dirfd >= 0) {
    close(st.dirfd);
    st.dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  }
  if (st.dirfd < 0) die("launch: --changes %s: %s", dir, open_path_why(errno));
  if (mkdirat(st.dirfd, "blobs", 0700) < 0 && errno != EEXIST) die("launch: --changes: blobs: %s", strerror(errno));
  st.blobs = openat(st.dirfd, "blobs", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (st.blobs < 0) die("launch: --changes: blobs: %s", strerror(errno));
  st.max_bytes = max_bytes;
  st.max_file = max_file;
}

int store_active(void) {
  return st.dirfd >= 0;
}

int store_add_root(int fd, const char *path) {
  if (st.nroots >= MAX_CHANGE_ROOTS) die("launch: too many --changes-root (at most %d)", MAX_CHANGE_ROOTS);
  st.roots[st.nroots].fd = fd;
  st.roots[st.nroots].path = strdup(path);
  return st.nroots++;
}

int store_nroots(void) {
  return st.nroots;
}

const char *store_root_path(int k) {
  return st.roots[k].path;
}

void store_unundoable(const char *why, const char *path) {
  if (st.unundoable != NULL) return;
  size_t n = strlen(why) + (path == NULL ? 0 : strlen(path)) + 4;
  st.unundoable = malloc(n);
  if (st.unundoable != NULL) snprintf(st.unundoable, n, "%s%s%s", why, path == NULL ? "" : ": ", path == NULL ? "" : path);
}

void store_unrecorded(const char *why) {
  if (st.unrecorded == NULL) st.unrecorded = strdup(why);
}

static size_t hash(int root, const char *rel) {
  size_t h = 1469598103934665603ULL ^ (size_t)root;
  for (const unsigned char *p = (const unsigned char *)rel; *p != '\0'; p++) h = (h ^ *p) * 1099511628211ULL;
  return h;
}

/* The slot of (ROOT, REL) in the index: its entry's, or the empty one where it goes. */
static size_t *slot(int root, const char *rel) {
  size_t i = hash(root, rel) & (st.index_cap - 1);
  for (;; i = (i + 1) & (st.index_cap - 1)) {
    size_t e = st.index[i];
    if (e == 0 || (st.t[e - 1].root == root && strcmp(st.t[e - 1].rel, rel) == 0)) return &st.index[i];
  }
}

/* Room for one more entry (the index kept at most half full). */
static int grow(void) {
  if (st.n + 1 > st.cap) {
    size_t cap = st.cap == 0 ? 256 : st.cap * 2;
    struct touched *t = realloc(st.t, cap * sizeof *t);
    if (t == NULL) return -1;
    st.t = t;
    st.cap = cap;
  }
  if (2 * (st.n + 1) > st.index_cap) {
    size_t cap = st.index_cap == 0 ? 1024 : st.index_cap * 2;
    size_t *index = calloc(cap, sizeof *index);
    if (index == NULL) return -1;
    free(st.index);
    st.index = index;
    st.index_cap = cap;
    for (size_t k = 0; k < st.n; k++) *slot(st.t[k].root, st.t[k].rel) = k + 1;
  }
  return 0;
}

/* The parent of REL beneath root K opened (O_PATH, no symlink on the way), and *NAME its last component
 * ("" for the root itself); -1 with errno. */
static int open_parent(int k, const char *rel, char *parent, size_t size, const char **name, int nolink) {
  const char *slash = strrchr(rel, '/');
  if (rel[0] == '\0') {
    *name = "";
    return fcntl(st.roots[k].fd, F_DUPFD_CLOEXEC, 3);
  }
  if (slash == NULL) {
    *name = rel;
    return fcntl(st.roots[k].fd, F_DUPFD_CLOEXEC, 3);
  }
  size_t n = (size_t)(slash - rel);
  if (n >= size) return errno = ENAMETOOLONG, -1;
  memcpy(parent, rel, n);
  parent[n] = '\0';
  *name = slash + 1;
  /* Before the touch, a parent that is itself a symlink is ELOOP too (not its link opened: the name would
   * be looked up in no directory and found absent); after the run, a path whose parent became a symlink
   * is absent (ENOTDIR), as the undo executor finds it. */
  if (nolink) return open_path_nolink(st.roots[k].fd, parent, RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS);
  return open_path(st.roots[k].fd, parent, RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS);
}

/* Keeps the content of file NAME beneath PFD (its state S) as blob E->blob: a link when the touch removes
 * the inode and nothing else links it, else a copy. 0, or -1 with *WHY. */
static int keep_content(int pfd, const char *name, const struct path_state *s, struct touched *e, int how,
                        const char **why) {
  if (s->size > st.max_file) return *why = "a file larger than the largest kept copy", -1;
  char blob[32];
  snprintf(blob, sizeof blob, "%d", e->blob = ++st.nblobs);
  if ((how & TOUCH_REPLACE) && s->blocks * 512 + st.used <= st.max_bytes && linkat(pfd, name, st.blobs, blob, 0) == 0) {
    struct path_state b;
    state_of(st.blobs, blob, &b);
    if (state_same_object(&b, s)) {
      e->linked = 1;
      st.used += s->blocks * 512;
      return 0;
    }
    unlinkat(st.blobs, blob, 0); /* swapped meanwhile: copy what is there now */
  }
  long long allocated = 0;
  if (copy_file(pfd, name, s, st.blobs, blob, st.max_bytes - st.used, &allocated, why) < 0) {
    e->blob = 0;
    return -1;
  }
  st.used += allocated;
  return 0;
}

/* E's pre-run copy was linked for a removal that has not happened (the inode is still at REL, about to
 * be written): made a copy of its bytes instead, while they are still those from before the run. */
static void copy_instead(struct touched *e, int k, const char *rel) {
  char parent[4096], blob[32];
  const char *name, *why = NULL;
  int pfd = open_parent(k, rel, parent, sizeof parent, &name, 1);
  struct path_state now = {.type = '?'};
  if (pfd >= 0) state_of(pfd, name, &now);
  if (pfd >= 0 && state_same_object(&now, &e->before)) {
    snprintf(blob, sizeof blob, "%d", e->blob);
    unlinkat(st.blobs, blob, 0);
    st.used -= e->before.blocks * 512;
    e->linked = 0;
    if (keep_content(pfd, name, &e->before, e, TOUCH_CONTENT, &why) < 0) store_unundoable(why, rel);
  }
  free(now.target);
  if (pfd >= 0) close(pfd);
}

void store_look(int k, const char *rel, struct path_state *s) {
  char parent[4096];
  const char *name;
  int pfd = open_parent(k, rel, parent, sizeof parent, &name, 0);
  if (pfd >= 0) {
    state_of(pfd, name, s);
    close(pfd);
    return;
  }
  memset(s, 0, sizeof *s);
  s->type = errno == ENOENT || errno == ENOTDIR ? '-' : '?';
}

/* A new entry for KEY (touched by REL), its slot SL; NULL when out of memory. */
static struct touched *add_entry(size_t *sl, int k, const char *key, const char *rel, int fresh) {
  struct touched *e = &st.t[st.n];
  memset(e, 0, sizeof *e);
  e->root = k;
  e->rel = strdup(key);
  e->at = strcmp(key, rel) == 0 ? NULL : strdup(rel);
  e->epoch = moves_epoch();
  e->fresh = fresh;
  if (e->rel == NULL || (e->at == NULL && strcmp(key, rel) != 0)) {
    free(e->rel);
    return NULL;
  }
  *sl = ++st.n;
  return e;
}

int store_touch(int k, const char *rel, int how) {
  if (st.unrecorded != NULL) return 0;
  if (st.n >= MAX_TOUCHED || grow() < 0) {
    /* A bound the command cannot outgrow: past it the change set would be incomplete, so none is kept. */
    store_unrecorded("the run touched more paths than are recorded (" MAX_TOUCHED_WORDS ")");
    return 0;
  }
  /* Recorded under its name before the run: once, however often and by whatever name it is touched. */
  char key[4096];
  int fresh = moves_origin(k, rel, moves_epoch(), key, sizeof key);
  if (fresh < 0) {
    store_unundoable("a path too long to follow through the run's directory moves", rel);
    return 0;
  }
  size_t *sl = slot(k, key);
  int moving = how & (TOUCH_MOVE_SRC | TOUCH_MOVE_DST);
  if (*sl != 0 && (how & TOUCH_CONTENT) && st.t[*sl - 1].linked) copy_instead(&st.t[*sl - 1], k, rel);
  if (*sl != 0 && !moving) return 0;
  char parent[4096];
  const char *name, *why = NULL;
  int pfd = open_parent(k, rel, parent, sizeof parent, &name, 1);
  if (pfd < 0 && errno == ELOOP && (how & TOUCH_LINKS_BACK)) return 1;
  struct path_state before = {.type = errno == ENOENT || errno == ENOTDIR ? '-' : '?'};
  if (pfd >= 0) state_of(pfd, name, &before);
  if (pfd >= 0 && before.type == 'l' && (how & TOUCH_FOLLOWS) && (how & TOUCH_LINKS_BACK)) {
    free(before.target);
    close(pfd);
    return 1;
  }
  if (how & TOUCH_MOVE_SRC) moves_rename_source(k, rel, &before);
  if (how & TOUCH_MOVE_DST) moves_rename_target(k, rel, &before);
  struct touched *e = *sl != 0 ? NULL : add_entry(sl, k, key, rel, fresh);
  if (e == NULL || fresh || pfd < 0) {
    if (e != NULL && fresh) e->before = (struct path_state){.type = '-'};
    if (e != NULL && !fresh) e->before.type = before.type;
    if (e != NULL && e->before.type == '?') store_unundoable("changed through a symlink or a path that could not be opened", rel);
    free(before.target);
    if (pfd >= 0) close(pfd);
    return 0;
  }
  e->before = before;
  if (e->before.type == 'l' && (how & TOUCH_FOLLOWS)) store_unundoable("changed through the symlink", rel);
  if (e->before.type == '?') store_unundoable("could not be looked at", rel);
  if (e->before.type == 'o' && (how & TOUCH_REPLACE)) store_unundoable("a socket or device node, which undo cannot make again", rel);
  if (e->before.type == 'f' && (how & (TOUCH_CONTENT | TOUCH_REPLACE)) && keep_content(pfd, name, &e->before, e, how, &why) < 0)
    store_unundoable(why, rel);
  close(pfd);
  return 0;
}

/* E's after-state; a linked blob whose inode is still at its path (the call failed) is dropped, one that
 * is only in the store made 0600 (never executable there). */
static void finish_entry(struct touched *e) {
  char now[4096];
  int gone = moves_forward(e->root, e->at != NULL ? e->at : e->rel, e->epoch, now, sizeof now);
  if (gone != 0) {
    e->after.type = gone < 0 ? '?' : '-';
    e->gone = 1;
    if (e->fresh) e->now = strdup(e->at); /* made and gone: before and after alike, never written */
  } else {
    if (e->fresh || strcmp(now, e->rel) != 0) e->now = strdup(now);
    store_look(e->root, now, &e->after);
  }
  if (e->blob == 0) return;
  char blob[32];
  snprintf(blob, sizeof blob, "%d", e->blob);
  if (e->linked && state_same_object(&e->after, &e->before)) {
    /* The removal it was linked for failed: the "copy" is the file itself. Unchanged but for the change
     * time (the link made it), it is no change; its bytes changed since, they cannot be put back. */
    unlinkat(st.blobs, blob, 0);
    e->blob = e->linked = 0;
    if (state_same_but_ctime(&e->before, &e->after)) {
      e->after.csec = e->before.csec;
      e->after.cnsec = e->before.cnsec;
    } else if (e->after.size != e->before.size || e->after.msec != e->before.msec || e->after.mnsec != e->before.mnsec) {
      store_unundoable("a file whose removal failed was changed after (its bytes from before were not copied)", e->rel);
    }
  } else if (state_same(&e->before, &e->after)) {
    unlinkat(st.blobs, blob, 0);
    e->blob = 0;
  } else if (e->linked) {
    fchmodat(st.blobs, blob, 0600, 0);
  }
}

/* Writes `states` (through a temporary name, so a reader sees it whole or not at all). */
static void write_states(void) {
  int fd = openat(st.dirfd, "states.tmp", O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
  FILE *f = fd < 0 ? NULL : fdopen(fd, "w");
  if (f == NULL) return;
  fprintf(f, "aleph-changes 1\n");
  for (int k = 0; k < st.nroots; k++) {
    fprintf(f, "root %d ", k);
    name_write(f, st.roots[k].path);
    fputc('\n', f);
  }
  fprintf(f, "recorded %d ", st.unrecorded == NULL);
  name_write(f, st.unrecorded == NULL ? "" : st.unrecorded);
  fprintf(f, "\nundoable %d ", st.unundoable == NULL);
  name_write(f, st.unundoable == NULL ? "" : st.unundoable);
  fprintf(f, "\nbytes %lld\n", st.used);
  tallies_write(f);
  for (size_t i = 0; st.unrecorded == NULL && i < st.n; i++) {
    struct touched *e = &st.t[i];
    if (state_same(&e->before, &e->after)) continue;
    fprintf(f, "entry %d %d %d ", e->root, e->blob, e->linked);
    /* Its name before the run, then (` >NAME`) where it is after the run when that differs. */
    name_write(f, e->fresh && e->now != NULL ? e->now : e->rel);
    state_write(f, &e->before);
    state_write(f, &e->after);
    state_write_birth(f, &e->before);
    state_write_birth(f, &e->after);
    if (!e->fresh && e->gone) {
      fputs(" >-", f); /* a move replaced or took away where it was: it is nowhere now */
    } else if (!e->fresh && e->now != NULL) {
      fputs(" >", f);
      name_write(f, e->now);
    }
    fputc('\n', f);
  }
  int bad = fflush(f) != 0 || fsync(fd) != 0;
  fclose(f);
  if (!bad) renameat(st.dirfd, "states.tmp", st.dirfd, "states");
}

void store_finish(void) {
  if (st.dirfd < 0) return;
  moves_settle(0, 1, store_look);
  if (moves_problem() != NULL) store_unundoable(moves_problem(), NULL);
  for (size_t i = 0; i < st.n; i++) finish_entry(&st.t[i]);
  if (moves_overloaded()) store_unrecorded("the run moved more directories than the recording follows");
  write_states();
}
