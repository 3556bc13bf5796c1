/*
 * The check's rules for one entry a run created or changed, whichever way it was found (the complete walk
 * or the journal): set-id bits cleared, a part that cannot be examined set aside whole.
 */
#ifndef ALEPH_AFTER_RUN_RULES_H
#define ALEPH_AFTER_RUN_RULES_H

#include <sys/stat.h>

#include "check-types.h"

/* A non-directory NAME beneath DIRFD (ST its lstat) with S_ISUID or S_ISGID: both bits cleared (on the
 * very inode ST names, never through a symlink), reported `setid PATH`; set aside when that fails. */
void clear_setid(struct check *c, int dirfd, const char *name, const struct stat *st, const char *path);
/* The same for the inode FD (O_PATH) names; 0 when it has no such bit any more, -1 when it could not be
 * cleared. */
int clear_setid_fd(struct check *c, int fd, const char *path);
/* A part the check cannot examine (errno E): set aside whole, reported `incomplete PATH: why`. */
void hostile(struct check *c, int dirfd, const char *name, const char *path, int e);
/* The rules for a non-directory NAME beneath DIRFD that the run created or changed: set-id bits, and a
 * symlink's target (symlink-out.c). */
void check_changed_file(struct check *c, int dirfd, const char *name, const struct stat *st, const char *path);

#endif
