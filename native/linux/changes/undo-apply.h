/*
 * Putting a run's changed paths back as they were before it (undo-apply.c): the undo executor's acting
 * half, on descriptors beneath each root.
 */
#ifndef ALEPH_CHANGES_UNDO_APPLY_H
#define ALEPH_CHANGES_UNDO_APPLY_H

#include "undo-run.h"

/* Puts every entry back as it was before the run. */
void undo_apply(struct undo_run *r);

#endif
