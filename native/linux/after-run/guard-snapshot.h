/*
 * The guard's snapshot, taken before the run: units and entries recorded from the protected paths, with
 * copies of their contents.
 */
#ifndef ALEPH_AFTER_RUN_GUARD_SNAPSHOT_H
#define ALEPH_AFTER_RUN_GUARD_SNAPSHOT_H

#include "guard-types.h"

/* A new unit of KIND at REL, its entries those added after it; its index. */
int add_unit(struct guard *g, char kind, const char *rel);
/* A copy of E (and of its rel) at the end of the entries; its index. */
int add_entry(struct guard *g, const struct gentry *e);
/* Snapshots one of the run's protected paths. */
void snap_top(struct guard *g, const char *rel);
/* Each entry's `end`: the index after its subtree (after the snapshot is taken or read). */
void link_entries(struct guard *g);

#endif
