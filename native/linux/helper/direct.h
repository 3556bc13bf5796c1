/*
 * Tier 3, no namespaces (`--direct`): the helper's steps on the host itself, where bwrap could not make
 * namespaces; what differs from the in-sandbox mode.
 */
#ifndef ALEPH_HELPER_DIRECT_H
#define ALEPH_HELPER_DIRECT_H

#include "options.h"

/* Checks O fits tier 3 (no mount operations, Landlock asked for), makes Landlock required and starts a
 * new session. */
void direct_enter(struct options *o);

#endif
