/*
 * The fork server's network namespaces (loopback up), one per session, lent to one run at a time, and one
 * fresh namespace waiting for the next session.
 */
#ifndef ALEPH_SPAWNER_NETPOOL_H
#define ALEPH_SPAWNER_NETPOOL_H

#define NETPOOL_KEY_MAX 80

void netpool_init(void);
/* Whether a fresh namespace is wanted (none waiting, and the host can make them). */
int netpool_wants_fill(void);
void netpool_fill(void);               /* while idle: make the waiting fresh namespace */
int netpool_lend(const char *key);     /* a namespace for a run of session KEY, or -1 */
void netpool_return(int fd);           /* the run is over (-1: nothing was lent) */
void netpool_close_in_child(int keep); /* a forked run keeps none of the pool's descriptors but KEEP */

#endif
