/*
 * Whole trees on descriptors, for what the checks set aside: removed (copies are keep.c's). No symlink is
 * followed, no mode is changed by name; no depth limit binds removal.
 */
#ifndef ALEPH_AFTER_RUN_TREE_H
#define ALEPH_AFTER_RUN_TREE_H

#include <sys/types.h>

/* Removes NAME beneath DIRFD and everything below it; 0 when it is gone (or was not there). */
int remove_tree(int dirfd, const char *name);
/* The directory NAME beneath DIRFD made rwx for its owner through an O_PATH descriptor of it (never through
 * a symlink, never by name); 0 when it is; -1 when NAME is not a directory or cannot be changed. */
int owner_rwx(int dirfd, const char *name);
/* Changes the mode of what the descriptor FD (O_PATH included) is, through /proc/self/fd/FD: that very
 * inode, whatever its name now is. */
int chmod_opened(int fd, mode_t mode);

#endif
