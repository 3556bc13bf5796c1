/*
 * Parked stubs: a stub no longer needed is renamed into a private directory under --state, and renamed
 * back out for the next run that needs one of its kind and name, instead of being removed and made again.
 */
#ifndef ALEPH_LAUNCHER_PARK_H
#define ALEPH_LAUNCHER_PARK_H

#include <sys/stat.h>

/* Renames a parked stub of KIND ('d', 'f' or 'c') to BASE beneath PARENT_FD (owned like PARENT), checked
 * to be still empty. 0 on success; -1 otherwise (none parked, another filesystem, or spoiled: EEXIST). */
int park_take(int state_fd, int parent_fd, const struct stat *parent, const char *base, char kind);
/* Parks the stub BASE beneath DIRFD, of KIND, when it is still the empty stub ST made. 0 on success. */
int park_return(int state_fd, int dirfd, const char *base, char kind, const struct stat *st);

#endif
