/*
 * A child in new namespaces that holds them while its parent opens them (/proc/PID/ns/…), sharing the
 * parent's memory (CLONE_VM): for the launcher's idmap user namespaces (launcher/idmap.c) and the fork
 * server's network namespaces (spawner/netpool.c).
 */
#ifndef ALEPH_COMMON_NSCHILD_H
#define ALEPH_COMMON_NSCHILD_H

#include <stddef.h>
#include <sys/types.h>

struct ns_child {
  pid_t pid;
  int release;
};

/* A child in new namespaces FLAGS (sharing this process's memory, on STACK of SIZE bytes) that runs SETUP
 * (may be NULL) there and holds them until ns_child_release(); its pid, or -1 with errno (EPROTO: SETUP
 * failed; the child is reaped). The caller reaps it after the release. */
pid_t ns_child_start(struct ns_child *c, int flags, int (*setup)(void), char *stack, size_t size);
void ns_child_release(struct ns_child *c);

#endif
