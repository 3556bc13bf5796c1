/*
 * Closing every descriptor from one number on (closefrom.c): close_range where the kernel has it, a walk
 * of /proc/self/fd where it refuses it (gVisor answers EINVAL to close_range up to ~0U).
 */
#ifndef ALEPH_COMMON_CLOSEFROM_H
#define ALEPH_COMMON_CLOSEFROM_H

/* Closes the descriptors FIRST to LAST (both included; LAST ~0U: all above FIRST). 0, or -1 with errno. */
int close_fds(unsigned first, unsigned last);

#endif
