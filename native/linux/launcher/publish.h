/*
 * Published ports, the host's end (`--publish PORT`): the launcher listens on the host's 127.0.0.1:PORT
 * while PROGRAM runs and passes each connection to the sandbox's bridge over a socket pair, whose other
 * end PROGRAM gets as `@PUBLISH` (the helper's --publish-fd). The host never connects to anything the
 * command could name: it only accepts on its own loopback and hands the connection in.
 */
#ifndef ALEPH_LAUNCHER_PUBLISH_H
#define ALEPH_LAUNCHER_PUBLISH_H

#include <sys/types.h>

/* The fork server, before it moves this process into a network namespace of its pool: listens on the
 * host's loopback for every `--publish PORT` among the launcher's options in ARGV (a socket belongs to
 * the namespace it was made in). A failure is kept for --publish to report. */
void publish_listen_early(char **argv);
/* --publish PORT: listens on the host's 127.0.0.1:PORT (or takes the socket made early); dies naming the
 * port and what holds it when it is taken. */
void publish_option(const char *port);
/* Replaces `@PUBLISH` in PROG by the bridge's end of the socket pair, left open across PROGRAM's exec. */
void publish_pass_on(char **prog);
/* Whether ports are published for this run (publish_serve has connections to pass in). */
int publish_active(void);
/* PID's wait status, once it has ended; until then passes every host connection in, and calls ON_EXTRA
 * whenever EXTRA_FD (-1: none; the change journal) is readable. The host's ports are closed when it
 * returns. */
int publish_serve(pid_t pid, int extra_fd, void (*on_extra)(void));

#endif
