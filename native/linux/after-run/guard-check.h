/*
 * The guard's check after the run: a unit of the snapshot compared with what is there now, and put back.
 */
#ifndef ALEPH_AFTER_RUN_GUARD_CHECK_H
#define ALEPH_AFTER_RUN_GUARD_CHECK_H

#include <stdio.h>

#include "guard-types.h"

/* Compares unit U with what is there now; what differs is renamed aside and, where the snapshot kept it,
 * rebuilt from the copy (reported to REPORT). */
void check_unit(struct guard *g, const struct gunit *u, FILE *report);

#endif
