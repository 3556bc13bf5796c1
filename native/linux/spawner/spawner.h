/*
 * The driver's fork server (`aleph-sandbox-init --spawner SOCKET`), on the host: it forks the driver's
 * runs so Node does not have to.
 */
#ifndef ALEPH_SPAWNER_SPAWNER_H
#define ALEPH_SPAWNER_SPAWNER_H

/* Serves requests on stdin until the driver closes it or dies; 0. */
int spawner_main(int argc, char **argv);

#endif
