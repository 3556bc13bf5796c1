/*
 * One packet on a Unix socket with descriptors beside it (SCM_RIGHTS): what the fork server, the change
 * watcher and a run's launcher pass each other (watcher/).
 */
#ifndef ALEPH_COMMON_FDPASS_H
#define ALEPH_COMMON_FDPASS_H

#include <stddef.h>
#include <sys/types.h>

#define FDPASS_MAX 128

/* Sends LEN bytes of BUF with the NFDS descriptors FDS (at most FDPASS_MAX); 0 when all was sent. */
int fdpass_send(int sock, const void *buf, size_t len, const int *fds, int nfds);
/* Receives one packet into BUF (SIZE bytes): its length (-1 with errno, 0 at the end), with up to MAXFDS
 * descriptors into FDS (*NFDS; the rest are closed). A packet or descriptor list cut short is -1 (EMSGSIZE),
 * its descriptors closed. */
ssize_t fdpass_recv(int sock, void *buf, size_t size, int *fds, int maxfds, int *nfds);

#endif
