/*
 * A relayed connection: two connected sockets whose bytes the bridge moves both ways (by splice through a
 * pipe, or by copying where a pair of sockets cannot splice), with half-closes passed on.
 */
#ifndef ALEPH_BRIDGE_RELAY_H
#define ALEPH_BRIDGE_RELAY_H

#include "loop.h"

/* Starts relaying between the connected sockets A and B (nonblocking, owned from now on). */
void relay_start(int ep, int a, int b);
/* Moves what an event on side W allows; retires the connection when both ways are done or one fails. */
void relay_event(int ep, struct watch *w);

#endif
