/*
 * Where a directory lies (where.h). The walk up opens ".." from each directory and compares (st_dev,
 * st_ino) with the roots' — as the kernel resolves "..", whatever mounts or names lie on the way — and
 * stops at a directory cached earlier, a root, or the top (where ".." is the directory itself). Every
 * directory on the way is cached with its verdict, so a drain of the journal or a symlink's resolution pays
 * one walk up per distinct ancestor.
 */
#define _GNU_SOURCE
#include "where.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>


#define WHERE_SLOTS 4096

struct seen {
  dev_t dev;
  ino_t ino;
  int root;      /* an index, or WHERE_OUTSIDE */
  int in_exempt; /* at or below a read-only path */
  struct seen *next;
};

struct where {
  struct seen *slots[WHERE_SLOTS];
};

static struct seen *find(const struct where *w, dev_t dev, ino_t ino) {
  for (struct seen *s = w->slots[(ino ^ dev) % WHERE_SLOTS]; s != NULL; s = s->next)
    if (s->dev == dev && s->ino == ino) return s;
  return NULL;
}

static void put(struct where *w, dev_t dev, ino_t ino, int root, int in_exempt) {
  struct seen *s = malloc(sizeof *s);
  if (s == NULL) return;
  *s = (struct seen){.dev = dev, .ino = ino, .root = root, .in_exempt = in_exempt};
  s->next = w->slots[(ino ^ dev) % WHERE_SLOTS];
  w->slots[(ino ^ dev) % WHERE_SLOTS] = s;
}

static int root_of(const struct check *c, const struct stat *st) {
  for (int i = 0; i < c->nroots; i++)
    if (c->roots[i].ino == st->st_ino && c->roots[i].dev == st->st_dev) return i;
  return WHERE_OUTSIDE;
}

struct chain {
  struct stat *st;
  int n, cap;
};

static int chain_add(struct chain *ch, const struct stat *st) {
  if (ch->n == ch->cap) {
    int cap = ch->cap == 0 ? 32 : ch->cap * 2;
    struct stat *p = realloc(ch->st, (size_t)cap * sizeof *p);
    if (p == NULL) return -1;
    ch->st = p;
    ch->cap = cap;
  }
  ch->st[ch->n++] = *st;
  return 0;
}

int where_is(struct check *c, int fd, int *in_exempt) {
  if (c->where == NULL && (c->where = calloc(1, sizeof *c->where)) == NULL) return WHERE_UNKNOWN;
  struct chain ch = {0};
  int root = WHERE_UNKNOWN, ex = 0, cur = fcntl(fd, F_DUPFD_CLOEXEC, 3);
  for (struct stat st; cur >= 0 && fstat(cur, &st) == 0;) {
    const struct seen *s = find(c->where, st.st_dev, st.st_ino);
    if (s != NULL) {
      root = s->root;
      ex = s->in_exempt;
      break;
    }
    if ((root = root_of(c, &st)) != WHERE_OUTSIDE) {
      put(c->where, st.st_dev, st.st_ino, root, 0);
      break;
    }
    root = WHERE_UNKNOWN;
    if (chain_add(&ch, &st) < 0) break;
    int up = openat(cur, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
    struct stat ust;
    close(cur);
    cur = up;
    if (up < 0 || fstat(up, &ust) < 0) break;
    if (ust.st_dev == st.st_dev && ust.st_ino == st.st_ino) {
      root = WHERE_OUTSIDE; /* the top: ".." is itself */
      break;
    }
  }
  if (cur >= 0) close(cur);
  if (root != WHERE_UNKNOWN) {
    /* Top down: a read-only path makes everything below it exempt. */
    for (int k = ch.n - 1; k >= 0; k--) {
      if (root >= 0 && exempt(c, &ch.st[k])) ex = 1;
      put(c->where, ch.st[k].st_dev, ch.st[k].st_ino, root, root >= 0 && ex);
    }
  }
  free(ch.st);
  if (in_exempt != NULL) *in_exempt = root >= 0 && ex;
  return root;
}

void where_forget(struct check *c) {
  if (c->where == NULL) return;
  for (int i = 0; i < WHERE_SLOTS; i++)
    for (struct seen *s = c->where->slots[i], *n; s != NULL; s = n) {
      n = s->next;
      free(s);
    }
  free(c->where);
  c->where = NULL;
}
