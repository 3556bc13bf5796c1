/*
 * The resolver's sockets: 127.0.0.53:53 over UDP and over TCP (two-byte length before each message), what
 * the sandbox's generated /etc/resolv.conf names.
 */
#ifndef ALEPH_BRIDGE_DNS_IO_H
#define ALEPH_BRIDGE_DNS_IO_H

#include <stdint.h>

#include "loop.h"
#include "names.h"

/* Answers every query waiting on the UDP socket FD. */
void dns_udp_event(const struct bridge_ctx *b, const struct name_rules *rules, int fd);
/* Accepts the TCP clients waiting on the listening socket LFD. */
void dns_tcp_accept(const struct bridge_ctx *b, int lfd);
/* Reads and answers what a TCP client (W) sent; closes it at its end or on an error. */
void dns_tcp_event(const struct bridge_ctx *b, const struct name_rules *rules, struct watch *w);

#endif
