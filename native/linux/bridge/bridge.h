/*
 * The network bridge inside the sandbox (--bridge PORT:PATH): 127.0.0.1:PORT in the sandbox's network
 * namespace, each connection relayed to the host proxy's Unix socket PATH by a process of its own.
 */
#ifndef ALEPH_HELPER_BRIDGE_H
#define ALEPH_HELPER_BRIDGE_H

/* The listening socket on 127.0.0.1:PORT (made before Landlock, so no bind right is needed after it). */
int bridge_listen(long port);
/* Forks the bridge (adopted by the namespace's init, not the program) relaying LFD's connections to the
 * Unix socket PATH; closes LFD here. */
void start_bridge(const char *path, int lfd);

#endif
