/*
 * A run's request to the fork server, as the driver frames it (packages/driver-linux/src/spawner.ts):
 *   u32 id, u32 flags (1: stdin from the driver; 2: the program is this helper's `--launch`, run in the
 *   forked child without executing the binary again), 16-byte token, u32 argc, argc NUL-terminated
 *   strings, u32 envc, envc "NAME=value" strings, the cwd, u32 nextra, and nextra blobs (u32 length +
 *   bytes) that become descriptors 3, 4, … (sealed memfds positioned at 0).
 */
#ifndef ALEPH_SPAWNER_REQUEST_H
#define ALEPH_SPAWNER_REQUEST_H

#include <stdint.h>

#define REQUEST_MAX_EXTRA 16

struct request {
  uint32_t id, flags;
  const unsigned char *token; /* 16 bytes */
  uint32_t argc;
  char **argv, **envp; /* NULL-terminated, allocated (free them); they point into the message */
  const char *cwd;
  int fds[3 + REQUEST_MAX_EXTRA]; /* the run's descriptors 0, 1, 2, 3…; -1 where not (yet) made */
  int nfds;
  int err; /* 0, or why the run cannot start (an errno) */
};

/* Decodes the request MSG (LEN bytes) into Q and makes its extra descriptors; Q->err says what failed.
 * -1 when MSG is too short to be answered (no token). */
int read_request(struct request *q, const unsigned char *msg, uint32_t len);
/* The run's stdin (a connection, or /dev/null), stdout and stderr: connections to the driver's socket
 * SOCK_PATH, each starting with the token and its stream's number. Sets Q->err on failure. */
void connect_stdio(struct request *q, const char *sock_path);

#endif
