/*
 * A network namespace of the helper's own (--own-netns), for tier 2: bwrap's network namespace belongs to
 * an outer user namespace where nothing of the sandbox holds a capability, so no port below 1024 can be
 * bound there; one made by the helper belongs to the sandbox's user namespace, where it briefly holds
 * what it needs to bind the bridge's ports. Nothing else changes: the bridge reaches the proxy through
 * its Unix socket, and published ports' connections come in over a socket pair.
 */
#ifndef ALEPH_HELPER_NETNS_H
#define ALEPH_HELPER_NETNS_H

/* Moves this process into a new network namespace with its loopback up; dies when it cannot. */
void enter_own_netns(void);

#endif
