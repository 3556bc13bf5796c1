/*
 * Where a directory lies, decided on descriptors: beneath which writable root, if any, and whether inside
 * one of the paths mounted read-only for the run. Names are never trusted; each directory met is cached.
 */
#ifndef ALEPH_AFTER_RUN_WHERE_H
#define ALEPH_AFTER_RUN_WHERE_H

#include "check-types.h"

#define WHERE_OUTSIDE (-1)
#define WHERE_UNKNOWN (-2)

/* The index of the root the directory FD lies beneath (or is), WHERE_OUTSIDE, or WHERE_UNKNOWN when a
 * step up could not be taken (the caller treats that as hostile). *IN_EXEMPT: it lies in a read-only path
 * (may be NULL). Walks up with openat(fd, "..") comparing (st_dev, st_ino), caching every directory met. */
int where_is(struct check *c, int fd, int *in_exempt);
/* Drops the cache (directories moved). */
void where_forget(struct check *c);

#endif
