/*
 * The guard's snapshot on disk: a manifest of %-escaped lines (`aleph-guard 2 TAKEN_S TAKEN_NS`, then
 * sections of R, U and E lines each ending in `end`) beside the data file holding the copies.
 */
#ifndef ALEPH_AFTER_RUN_GUARD_MANIFEST_H
#define ALEPH_AFTER_RUN_GUARD_MANIFEST_H

#include "guard-types.h"

/* Opens (creates) the root's manifest and data files under STATE_FD. */
void manifest_open(struct guard *g, int state_fd);
/* Reads the manifest up to its last `end`; 0 when it holds no whole snapshot. */
int manifest_load(struct guard *g);
/* Writes the tops, units and entries from the given counts on as one section ending in `end`: the whole
 * manifest (FRESH), or appended to it. A section cut short (a killed launcher) has no `end` and is not read. */
void manifest_save(struct guard *g, int units, int tops, int fresh);
/* Forgets what the snapshot held, its copies too. */
void manifest_wipe(struct guard *g);
/* Removes the two files (the last run using the root). */
void manifest_remove(const struct guard *g, int state_fd);

#endif
