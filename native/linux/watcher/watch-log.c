/*
 * The change watcher's entries (watch-log.h): a hash table by (directory handle, name), each with its
 * segments (what happened to it between two runs' begins: a run is told only what happened after its own
 * begin, never an older event's bits or objects). Its size is bounded: past WATCH_LOG_MAX entries,
 * segments and objects together (a few hundred bytes each) nothing more is kept, and the runs under way then
 * are told their events were lost (they walk their roots instead).
 */
#define _GNU_SOURCE
#include "watch-log.h"

#include <stdlib.h>
#include <string.h>

#define LOG_SLOTS (1 << 16)
#define WATCH_LOG_MAX 400000 /* entries, segments and objects together */
#define OBJS_MAX 16

uint64_t watch_seq, watch_lost_seq, watch_epoch;
int watch_log_on;
static struct wentry *slots[LOG_SLOTS];
static long count;

static unsigned long slot_of(const struct whandle *d, const char *name) {
  unsigned long x = 14695981039346656037ul ^ d->fsid;
  for (unsigned i = 0; i < d->len; i++) x = (x ^ d->fh[i]) * 1099511628211ul;
  for (const char *c = name; *c != '\0'; c++) x = (x ^ (unsigned char)*c) * 1099511628211ul;
  return x % LOG_SLOTS;
}

static int same(const struct whandle *a, const struct whandle *b) {
  return a->fsid == b->fsid && a->len == b->len && memcmp(a->fh, b->fh, a->len) == 0;
}

void watch_log_note(const struct whandle *dir, const char *name, uint64_t mask, const struct whandle *obj, uint64_t seq) {
  if (!watch_log_on) return;
  struct wentry **slot = &slots[slot_of(dir, name)], *e;
  for (e = *slot; e != NULL; e = e->next)
    if (same(&e->dir, dir) && strcmp(e->name, name) == 0) break;
  if (e == NULL) {
    size_t n = strlen(name);
    e = count < WATCH_LOG_MAX ? calloc(1, sizeof *e + n + 1) : NULL;
    if (e == NULL) {
      watch_lost_seq = seq;
      return;
    }
    e->dir = *dir;
    memcpy(e->name, name, n + 1);
    e->next = *slot;
    *slot = e;
    count++;
  }
  struct wseg *g = e->segs;
  if (g == NULL || g->first_seq <= watch_epoch) { /* a run began since: a new segment */
    g = count < WATCH_LOG_MAX ? calloc(1, sizeof *g) : NULL;
    if (g == NULL) {
      watch_lost_seq = seq;
      return;
    }
    g->first_seq = seq;
    g->next = e->segs;
    e->segs = g;
    count++;
  }
  g->mask |= mask;
  g->last_seq = seq;
  if (obj == NULL || name[0] == '\0') return;
  int nobj = 0;
  for (struct wobj *o = g->objs; o != NULL; o = o->next, nobj++)
    if (same(&o->h, obj)) return;
  struct wobj *o = nobj < OBJS_MAX && count < WATCH_LOG_MAX ? malloc(sizeof *o) : NULL;
  if (o == NULL) { /* a lost object could hide a directory made: as good as lost events */
    if (nobj < OBJS_MAX) watch_lost_seq = seq;
    return;
  }
  o->h = *obj;
  o->next = g->objs;
  g->objs = o;
  count++;
}

static void free_segs(struct wseg *g) {
  while (g != NULL) {
    struct wseg *next = g->next;
    while (g->objs != NULL) {
      struct wobj *o = g->objs;
      g->objs = o->next;
      free(o);
      count--;
    }
    free(g);
    count--;
    g = next;
  }
}

void watch_log_prune(uint64_t seq) {
  for (int sl = 0; sl < LOG_SLOTS; sl++)
    for (struct wentry **p = &slots[sl]; *p != NULL;) {
      struct wentry *e = *p;
      struct wseg **g = &e->segs;
      while (*g != NULL && (*g)->last_seq > seq) g = &(*g)->next;
      free_segs(*g); /* it and every older one */
      *g = NULL;
      if (e->segs != NULL) {
        p = &e->next;
        continue;
      }
      *p = e->next;
      free(e);
      count--;
    }
}

uint64_t watch_log_mask(const struct wentry *e, uint64_t since) {
  uint64_t mask = 0;
  for (const struct wseg *g = e->segs; g != NULL && g->first_seq > since; g = g->next) mask |= g->mask;
  return mask;
}

const struct wentry *watch_log_next(const struct wentry *prev, uint64_t since) {
  int s = 0;
  const struct wentry *e = NULL;
  if (prev != NULL) {
    e = prev->next;
    s = (int)slot_of(&prev->dir, prev->name);
  } else {
    e = slots[0];
  }
  for (;;) {
    for (; e != NULL; e = e->next)
      if (e->segs != NULL && e->segs->first_seq > since) return e;
    if (++s >= LOG_SLOTS) return NULL;
    e = slots[s];
  }
}
