/*
 * The check by the complete walk: every entry beneath a directory looked at, what changed during the run
 * told by its ctime. For whole roots where no journal is kept, and for directories the journal saw moved
 * in (their old contents have no events).
 */
#ifndef ALEPH_AFTER_RUN_CHECK_WALK_H
#define ALEPH_AFTER_RUN_CHECK_WALK_H

#include "check-types.h"

/* Checks everything beneath the directory DIRFD (shown as PATH) of root ROOT, the directory itself as a
 * possible git directory. 0 when done; -1 when it could not be walked whole (reported `incomplete`). */
int check_tree(struct check *c, int root, int dirfd, const char *path);
/* Before the run, when root ROOT keeps no known git directories yet: every git directory beneath it is
 * noted as known (a walk that changes nothing). */
void discover_git_dirs(struct check *c, int root);

#endif
