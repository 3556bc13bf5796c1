/*
 * Connections and datagrams the sandbox's kernel refused on the transparent path: a connection to an
 * address on a port that is not an egress port finds no listener in the sandbox's network namespace (every
 * address routes to its loopback, routes.c), and the kernel answers the SYN with a reset; a UDP datagram
 * to any address but the sandbox's resolver finds none either, and the kernel answers it with an ICMP
 * port-unreachable error. A packet socket on `lo`, filtered to such resets and to ICMP, sees each one; the
 * bridge reports `ALEPH port-refused ADDRESS:PORT` or `ALEPH udp-refused ADDRESS:PORT` to the proxy (with
 * the name for an allowed name's synthetic address), which records the denial its allowlist gives
 * (`network.host`, or `network.port` naming the entry that adds the port; `network.udp` for a datagram,
 * which no entry allows). The sandbox's own loopback addresses (127.0.0.1, ::1) are not reported: a
 * server of the command that is not listening yet is not a refusal of the sandbox's.
 */
#ifndef ALEPH_BRIDGE_REFUSED_H
#define ALEPH_BRIDGE_REFUSED_H

#include "loop.h"

/* A watcher's socket for IPv4 (IPV6 0) or IPv6 (1) (needs CAP_NET_RAW over the namespace), or -1 where it
 * cannot be made: refusals on ports outside the egress ports then go unrecorded, as before. */
int refused_open(int ipv6);
/* Reads every reset and ICMP error waiting on FD and reports each new target once. */
void refused_event(const struct bridge_ctx *b, int fd);

#endif
