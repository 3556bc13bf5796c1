/*
 * The user namespaces of the launcher's idmapped mounts: one per owner, mapping it to the run's uid.
 */
#ifndef ALEPH_LAUNCHER_IDMAP_H
#define ALEPH_LAUNCHER_IDMAP_H

#include <sys/types.h>

/* A user namespace mapping OWNER (GROUP) to TO, kept per owner for the run; dies when it cannot. */
int idmap_userns(uid_t owner, gid_t group, long to);
/* After the run: reaps the children that held the namespaces. */
void idmap_reap(void);

#endif
