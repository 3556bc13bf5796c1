/*
 * Published ports, the sandbox's end: the launcher accepts each host connection to 127.0.0.1:PORT on the
 * host and passes it in over a socket pair (SCM_RIGHTS, with the port as the message); the bridge connects
 * to 127.0.0.1:PORT of the sandbox's network namespace and relays.
 */
#ifndef ALEPH_BRIDGE_PUBLISH_H
#define ALEPH_BRIDGE_PUBLISH_H

#include "loop.h"

/* Takes every host connection waiting on the socket pair FD; 0 when the launcher closed its end. */
int publish_event(const struct bridge_ctx *b, int fd);

#endif
