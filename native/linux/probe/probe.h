/*
 * `aleph-sandbox-init --probe`: what this kernel does (Landlock, seccomp, user namespaces, mknod), found
 * by doing it, as one JSON line on stdout.
 */
#ifndef ALEPH_PROBE_PROBE_H
#define ALEPH_PROBE_PROBE_H

int probe_main(void);

#endif
