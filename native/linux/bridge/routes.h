/*
 * Every address is this namespace's own: `local 0.0.0.0/0` and `local ::/0` on `lo` (the local routing
 * table), so a connection to any address (an allowlist entry given as an address, 10.1.2.3 or
 * 2001:db8::1, the host's 127.0.0.2) stays in the sandbox's network namespace, where the bridge's egress
 * listeners take it on the egress ports and the kernel refuses it on any other. Nothing leaves: the
 * namespace has no other interface.
 */
#ifndef ALEPH_BRIDGE_ROUTES_H
#define ALEPH_BRIDGE_ROUTES_H

/* Adds both routes (needs CAP_NET_ADMIN over the namespace); -1 when IPv4's could not be added (a kernel
 * or gVisor without netlink routes): address entries outside 127.0.0.0/8 are then unreachable from inside
 * (ENETUNREACH) except through the proxy variables, and nothing else changes. IPv6's is skipped where
 * the namespace has no IPv6. */
int routes_all_local(void);

#endif
