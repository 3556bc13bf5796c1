/*
 * Symlinks a run left that lead out of the writable roots: an agent's host-side read or write tool would
 * follow them. Reported, never removed.
 */
#ifndef ALEPH_AFTER_RUN_SYMLINK_OUT_H
#define ALEPH_AFTER_RUN_SYMLINK_OUT_H

#include "check-types.h"

/* Where the target of symlink NAME beneath DIRFD leads, resolved from its directory as the kernel would
 * (at most 40 links): inside a root (nothing reported), or outside every root, dangling outside, or
 * unresolvable (a loop, an unreadable step): reported `symlink PATH<TAB>TARGET<TAB>outside|dangling|
 * unresolvable`. */
void report_symlink(struct check *c, int dirfd, const char *name, const char *path);

#endif
