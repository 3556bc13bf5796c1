/* The directories a run moved (moves.h). */
#define _GNU_SOURCE
#include "moves.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


#define MAX_PENDING 64
#define MAX_MOVES 20000
/* Moves looked at, over the whole run, when names are followed through them: a bound on the host's work
 * (every touched path against every move) that a command cannot outgrow. Past it no name is followed and
 * the run says its changes were not recorded. */
#define MAX_STEPS 400000000LL

struct move {
  int root;
  char *from, *to; /* NULL: outside every root */
  struct path_state obj; /* the directory moved; from outside: what was at `to` before */
  pid_t tid; /* the thread that called rename, */
  int nr;    /* and which rename call */
};

static char problem_text[1024]; /* why the moves could not be followed (the first reason), or "" */

static void problem(const char *why, const char *path) {
  if (problem_text[0] == '\0') snprintf(problem_text, sizeof problem_text, "%s%s%s", why, path == NULL ? "" : ": ", path == NULL ? "" : path);
}

const char *moves_problem(void) {
  return problem_text[0] == '\0' ? NULL : problem_text;
}

static long long steps;

int moves_overloaded(void) {
  return steps > MAX_STEPS;
}

static struct move *done;
static int ndone, capdone;
static struct move pending[MAX_PENDING];
static int npending;

/* The rename being handled: its paths as the store saw them. */
static struct {
  int active, exchange, nr;
  pid_t tid;
  int have_src, have_dst, sk, tk;
  char *src, *dst;
  struct path_state ss, ts;
} cur;

static void forget_current(void) {
  free(cur.src);
  free(cur.dst);
  memset(&cur, 0, sizeof cur);
}

void moves_rename_begin(pid_t tid, int nr, int exchange) {
  forget_current();
  cur.active = 1;
  cur.exchange = exchange;
  cur.tid = tid;
  cur.nr = nr;
}

/* One side of the rename: seen once, beneath root K at REL, as it is now (S, kept without its link
 * target: a directory's has none, and the state kept must not share a malloc'd one). */
static void note_side(int *have, int *kk, char **path, struct path_state *kept, int k, const char *rel,
                      const struct path_state *s) {
  if (!cur.active || *have) return;
  *have = 1;
  *kk = k;
  *path = strdup(rel);
  *kept = *s;
  kept->target = NULL;
}

void moves_rename_source(int k, const char *rel, const struct path_state *s) {
  note_side(&cur.have_src, &cur.sk, &cur.src, &cur.ss, k, rel, s);
}

void moves_rename_target(int k, const char *rel, const struct path_state *s) {
  note_side(&cur.have_dst, &cur.tk, &cur.dst, &cur.ts, k, rel, s);
}

static void add_pending(int root, char *from, char *to, const struct path_state *obj) {
  if (npending >= MAX_PENDING) {
    problem("more directory moves at once than are followed", to != NULL ? to : from);
    free(from);
    free(to);
    return;
  }
  pending[npending++] = (struct move){.root = root, .from = from, .to = to, .obj = *obj, .tid = cur.tid, .nr = cur.nr};
}

void moves_rename_end(void) {
  if (!cur.active) return;
  int src_dir = cur.have_src && cur.ss.type == 'd', dst_dir = cur.have_dst && cur.ts.type == 'd';
  if (cur.exchange && (src_dir || dst_dir)) {
    problem("directories swapped (RENAME_EXCHANGE), which the recording does not follow", cur.src != NULL ? cur.src : cur.dst);
  } else if (src_dir && (!cur.have_dst || cur.tk == cur.sk) && cur.src[0] != '\0') {
    add_pending(cur.sk, cur.src, cur.have_dst ? cur.dst : NULL, &cur.ss);
    cur.src = cur.dst = NULL;
  } else if (!cur.have_src && cur.have_dst && cur.dst[0] != '\0') {
    /* From outside every root: whatever comes to the target is new to it. */
    add_pending(cur.tk, NULL, cur.dst, &cur.ts);
    cur.dst = NULL;
  }
  forget_current();
}

static int push_done(const struct move *m) {
  if (ndone >= MAX_MOVES) return -1;
  if (ndone == capdone) {
    int cap = capdone == 0 ? 64 : capdone * 2;
    struct move *grown = realloc(done, (size_t)cap * sizeof *grown);
    if (grown == NULL) return -1;
    done = grown;
    capdone = cap;
  }
  done[ndone++] = *m;
  return 0;
}

/* 1 when move M is seen done, 0 when it is not (yet), -1 when its directory is neither where it was nor
 * where it went. */
static int seen_done(const struct move *m, void (*look)(int, const char *, struct path_state *)) {
  struct path_state at_to = {.type = '-'}, at_from = {.type = '-'};
  if (m->to != NULL) look(m->root, m->to, &at_to);
  int result;
  if (m->from == NULL) {
    result = at_to.type == 'd' && !state_same_object(&at_to, &m->obj);
  } else if (m->to != NULL && state_same_object(&at_to, &m->obj)) {
    result = 1;
  } else {
    look(m->root, m->from, &at_from);
    result = state_same_object(&at_from, &m->obj) ? 0 : m->to == NULL ? 1 : -1;
  }
  free(at_to.target);
  free(at_from.target);
  return result;
}

/* Whether thread TID is still in system call NR (its rename has not returned yet); a thread gone, or in
 * another call or none, is not. */
static int still_in_call(pid_t tid, int nr) {
  char path[64], text[32];
  snprintf(path, sizeof path, "/proc/%d/syscall", (int)tid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  ssize_t n = read(fd, text, sizeof text - 1);
  close(fd);
  if (n <= 0) return 0;
  text[n] = '\0';
  return text[0] >= '0' && text[0] <= '9' && atoi(text) == nr;
}

void moves_settle(pid_t caller, int final, void (*look)(int, const char *, struct path_state *)) {
  int kept = 0;
  for (int i = 0; i < npending; i++) {
    struct move *m = &pending[i];
    int seen = seen_done(m, look);
    if (seen == 1 && push_done(m) == 0) continue;
    if (seen == 1) problem("more directory moves than are followed", m->to != NULL ? m->to : m->from);
    else if (seen < 0) problem("a moved directory is neither where it was nor where it went", m->to);
    else if (!final && m->tid != caller && still_in_call(m->tid, m->nr)) {
      pending[kept++] = *m; /* its rename has not returned yet */
      continue;
    }
    free(m->from); /* failed (its thread has gone on), or no longer followed */
    free(m->to);
  }
  npending = kept;
}

int moves_epoch(void) {
  return ndone;
}

/* Whether PATH is strictly beneath DIR (DIR/...). */
static int beneath(const char *path, const char *dir) {
  size_t n = strlen(dir);
  return strncmp(path, dir, n) == 0 && path[n] == '/';
}

/* PATH with its prefix FROM (a directory it is beneath) replaced by TO, into OUT; -1 when too long. */
static int replace_prefix(char *path, size_t size, const char *from, const char *to) {
  char rest[4096];
  if (snprintf(rest, sizeof rest, "%s", path + strlen(from)) >= (int)sizeof rest) return -1;
  return snprintf(path, size, "%s%s", to, rest) >= (int)size ? -1 : 0;
}

int moves_origin(int k, const char *rel, int epoch, char *out, size_t size) {
  if (snprintf(out, size, "%s", rel) >= (int)size) return -1;
  if (moves_overloaded()) return 0;
  steps += epoch;
  for (int i = epoch - 1; i >= 0; i--) {
    const struct move *m = &done[i];
    if (m->root != k) continue;
    int fresh = m->to != NULL && beneath(out, m->to) ? m->from == NULL : m->from != NULL && beneath(out, m->from);
    if (fresh) {
      char path[4096];
      snprintf(path, sizeof path, "%s", out);
      return snprintf(out, size, "\1%d:%s", i, path) >= (int)size ? -1 : 1;
    }
    if (m->to != NULL && beneath(out, m->to) && replace_prefix(out, size, m->to, m->from) < 0) return -1;
  }
  return 0;
}

int moves_forward(int k, const char *rel, int epoch, char *out, size_t size) {
  if (snprintf(out, size, "%s", rel) >= (int)size) return -1;
  if (moves_overloaded()) return 0;
  steps += ndone - epoch;
  for (int i = epoch; i < ndone; i++) {
    const struct move *m = &done[i];
    if (m->root != k) continue;
    if (m->from != NULL && beneath(out, m->from)) {
      if (m->to == NULL) return 1;
      if (replace_prefix(out, size, m->from, m->to) < 0) return -1;
    } else if (m->to != NULL && beneath(out, m->to)) {
      return 1;
    }
  }
  return 0;
}
