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

struct wentry {
  struct wentry *next;
  struct wobj *objs;
  uint64_t mask, seq;
  struct whandle dir;
  char name[];
};

/* The number of the latest event; the sequence number the last lost events (or a full log) had. */
extern uint64_t watch_seq, watch_lost_seq;
/* Whether entries are kept (a run is under way): between runs, events only move the marks. */
extern int watch_log_on;

/* Entry NAME of DIR had event MASK, naming OBJ (may be NULL), as event SEQ. */
void watch_log_note(const struct whandle *dir, const char *name, uint64_t mask, const struct whandle *obj, uint64_t seq);
/* Forgets every entry whose latest event is SEQ or older. */
void watch_log_prune(uint64_t seq);
/* The entries touched after SINCE, in no order: NULL first, then the previous one; NULL at the end. */
const struct wentry *watch_log_next(const struct wentry *prev, uint64_t since);

#endif
