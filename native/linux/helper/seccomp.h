/*
 * The seccomp-BPF program the driver compiled (--seccomp-fd), read by the helper and loaded last, after
 * every other descriptor is closed, just before the exec.
 */
#ifndef ALEPH_HELPER_SECCOMP_H
#define ALEPH_HELPER_SECCOMP_H

#include <linux/filter.h>

/* The program read from FD (at most 1 MiB of whole instructions). */
struct sock_fprog read_seccomp(int fd);
/* Loads PROG (nothing when it holds none). */
void load_seccomp(const struct sock_fprog *prog);

#endif
