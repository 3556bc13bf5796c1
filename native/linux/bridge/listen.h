/* The bridge's listening sockets, made before the helper drops its identity. */
#ifndef ALEPH_BRIDGE_LISTEN_H
#define ALEPH_BRIDGE_LISTEN_H

#include <stdint.h>

/* A listening TCP socket on ADDR:PORT (host byte order; 0: every address of this namespace). Dies
 * naming the address on failure. */
int listen_tcp(uint32_t addr, long port);
/* A listening TCP socket on every address of this namespace, IPv4 and IPv6 (one dual-stack socket; IPv4
 * alone where the namespace has no IPv6), port PORT. Dies naming the port on failure. */
int listen_tcp_any(long port);
/* A bound UDP socket on ADDR:PORT (host byte order). Dies naming the address on failure. */
int bind_udp(uint32_t addr, long port);

#endif
