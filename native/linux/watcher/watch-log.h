/*
 * What the change watcher saw, for the runs under way: each changed entry (its directory's handle and its
 * name; "" for the directory itself), the events' mask OR-ed, the handles of the objects the events named,
 * and the sequence number of its latest event, so a run gets exactly the entries touched since it began.
 */
#ifndef ALEPH_WATCHER_WATCH_LOG_H
#define ALEPH_WATCHER_WATCH_LOG_H

#include <stdint.h>

#include "watch-tree.h"

struct wobj {
  struct wobj *next;
  struct whandle h;
};

/* What an entry had between two runs' begins (a segment never spans one, so a run's view is whole
 * segments): its events' mask OR-ed and the objects they named. */
struct wseg {
  struct wseg *next; /* older */
  struct wobj *objs;
  uint64_t mask, first_seq, last_seq;
};

struct wentry {
  struct wentry *next;
  struct wseg *segs; /* newest first */
  struct whandle dir;
  char name[];
};

/* The number of the latest event; the sequence number the last lost events (or a full log) had; the token
 * of the latest begin (segments start anew after it). */
extern uint64_t watch_seq, watch_lost_seq, watch_epoch;
/* Whether entries are kept (a run is under way): between runs, events only move the marks. */
extern int watch_log_on;

/* Entry NAME of DIR had event MASK, naming OBJ (may be NULL), as event SEQ. */
void watch_log_note(const struct whandle *dir, const char *name, uint64_t mask, const struct whandle *obj, uint64_t seq);
/* Forgets every entry whose latest event is SEQ or older. */
void watch_log_prune(uint64_t seq);
/* The entries touched after SINCE, in no order: NULL first, then the previous one; NULL at the end. */
const struct wentry *watch_log_next(const struct wentry *prev, uint64_t since);
/* Entry E as a run that began at SINCE sees it: the events' mask since then (the objects: each segment
 * after SINCE, through watch_seg_after). */
uint64_t watch_log_mask(const struct wentry *e, uint64_t since);

#endif
