/*
 * On a root host (--clone NAME ro|rw): a node's descriptor replaced by a detached mount of it, for the
 * helper to attach inside the sandbox.
 */
#ifndef ALEPH_LAUNCHER_CLONE_H
#define ALEPH_LAUNCHER_CLONE_H

/* Replaces node NAME's descriptor with a detached mount of it, read-only when MODE is "ro" or the node is
 * mounted read-only, and idmapped to UID when UID >= 0; nothing for an absent node. Dies when the kernel or
 * the filesystem cannot. */
void clone_node(const char *name, const char *mode, long uid);

#endif
