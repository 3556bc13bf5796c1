/*
 * The loopback interface of a fresh network namespace, brought up: the fork server's pooled namespaces
 * (spawner/netpool.c) and the one the helper makes for the bridge in a user namespace (helper/netns.c).
 */
#ifndef ALEPH_COMMON_LOOPBACK_H
#define ALEPH_COMMON_LOOPBACK_H

/* Brings `lo` of this process's network namespace up; -1 when it could not (CAP_NET_ADMIN there). */
int loopback_up(void);

#endif
