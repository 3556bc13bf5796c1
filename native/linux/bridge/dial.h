/*
 * Connections the bridge makes before it relays: to the managed proxy's Unix socket (as is, for the proxy
 * variables' port; or with `CONNECT name:port` first, for a transparent connection), and to a published
 * port inside the sandbox's network namespace, for a host connection the launcher passed in.
 */
#ifndef ALEPH_BRIDGE_DIAL_H
#define ALEPH_BRIDGE_DIAL_H

#include "loop.h"

/* A connected socket to the proxy at PATH (nonblocking), or -1. */
int dial_proxy(const char *path);
/* Asks the proxy at PATH for a tunnel to NAME:PORT for the accepted CLIENT; relays once it says 200, and
 * resets CLIENT when it refuses or cannot be reached. */
void dial_connect(const struct bridge_ctx *b, int client, const char *name, unsigned port);
/* Connects to 127.0.0.1:PORT of this network namespace for the host connection HOST; relays once
 * connected, resets HOST when nothing listens there. */
void dial_published(const struct bridge_ctx *b, int host, unsigned port);
/* Moves a dial on after an event on W (its connection, or its timer). */
void dial_event(const struct bridge_ctx *b, struct watch *w, uint32_t events);
/* Closes FD so that its peer sees a reset, not an orderly end. */
void close_reset(int fd);

#endif
