/*
 * Published ports, the host's end (publish.h). The listening sockets are made on the host's loopback only
 * (127.0.0.1, SO_REUSEADDR, never SO_REUSEPORT: a second run publishing the same port at the same time is
 * refused, not sharing it). While PROGRAM runs, a poll loop accepts each connection and sends it in as
 * one SOCK_SEQPACKET message: the port (two bytes) with the descriptor (SCM_RIGHTS). PROGRAM's end is
 * watched through a pidfd; without pidfd_open (before Linux 5.3) the loop looks every 100 ms.
 */
#define _GNU_SOURCE
#include "publish.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../common/errors.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#define MAX_PUBLISHED 16

struct published {
  long port;
  int fd;    /* listening on the host's 127.0.0.1:port, or -1 */
  int error; /* why it could not be made */
  int early; /* made by the fork server, not yet taken by --publish */
};

static struct published ports[MAX_PUBLISHED];
static int nports;
static int pair[2] = {-1, -1}; /* [0] ours, [1] the bridge's */

static int listen_loopback(long port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return -1;
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(fd, (struct sockaddr *)&a, sizeof a) < 0 || listen(fd, 128) < 0) {
    int e = errno;
    close(fd);
    errno = e;
    return -1;
  }
  return fd;
}

static long port_of(const char *text) {
  long port = parse_long(text, "--publish port");
  if (port < 1 || port > 65535) die("launch: --publish %s is not a port from 1 to 65535", text);
  return port;
}

void publish_listen_early(char **argv) {
  for (char **p = argv + 2; *p != NULL && p[1] != NULL && strcmp(*p, "--") != 0; p++) {
    if (strcmp(*p, "--publish") != 0 || nports >= MAX_PUBLISHED) continue;
    long port = strtol(p[1], NULL, 10);
    int fd = port >= 1 && port <= 65535 ? listen_loopback(port) : -1;
    int e = errno;
    if (fd >= 0) {
      /* Above where the fork server puts the run's own descriptors (0, 1, 2, 3, …) next. */
      int high = fcntl(fd, F_DUPFD_CLOEXEC, 64);
      close(fd);
      fd = high;
      e = errno;
    }
    ports[nports++] = (struct published){.port = port, .fd = fd, .error = fd < 0 ? e : 0, .early = 1};
  }
}

void publish_option(const char *text) {
  long port = port_of(text);
  int k = 0;
  while (k < nports && !(ports[k].early && ports[k].port == port)) k++;
  if (k == nports) {
    if (nports >= MAX_PUBLISHED) die("launch: too many --publish (at most %d)", MAX_PUBLISHED);
    int fd = listen_loopback(port);
    ports[nports++] = (struct published){.port = port, .fd = fd, .error = fd < 0 ? errno : 0};
  }
  ports[k].early = 0; /* taken */
  if (ports[k].fd < 0)
    die("launch: --publish %ld: cannot listen on the host's 127.0.0.1:%ld: %s (another run publishing it, or a "
        "service of the host, holds it); publish another port, or end what holds it",
        port, port, strerror(ports[k].error));
  if (pair[0] < 0 && socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) < 0)
    die("launch: --publish: socketpair: %s", strerror(errno));
}

void publish_pass_on(char **prog) {
  static char number[16];
  for (char **p = prog; *p != NULL; p++) {
    if (strcmp(*p, "@PUBLISH") != 0) continue;
    if (pair[1] < 0) die("launch: @PUBLISH used without --publish");
    fcntl(pair[1], F_SETFD, 0);
    snprintf(number, sizeof number, "%d", pair[1]);
    *p = number;
  }
}

/* Sends every connection waiting on the listening socket of PORTS[K] in. */
static void pass_in(int k) {
  for (;;) {
    int fd = accept4(ports[k].fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) return;
    unsigned char port[2] = {(unsigned char)(ports[k].port >> 8), (unsigned char)ports[k].port};
    union {
      struct cmsghdr align;
      char buf[CMSG_SPACE(sizeof(int))];
    } control;
    struct iovec iov = {.iov_base = port, .iov_len = sizeof port};
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.buf, .msg_controllen = sizeof control.buf};
    struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &fd, sizeof fd);
    sendmsg(pair[0], &msg, MSG_DONTWAIT | MSG_NOSIGNAL); /* a bridge gone or not reading: the client sees it closed */
    close(fd);
  }
}

/* Polls the listening sockets and PID's end (through PIDFD, or every 100 ms without one) until it ended. */
static void serve(pid_t pid, int pidfd, int extra_fd, void (*on_extra)(void)) {
  struct pollfd fds[MAX_PUBLISHED + 2];
  for (int k = 0; k < nports; k++) fds[k] = (struct pollfd){.fd = ports[k].fd, .events = POLLIN};
  fds[nports] = (struct pollfd){.fd = pidfd, .events = POLLIN};
  fds[nports + 1] = (struct pollfd){.fd = extra_fd, .events = POLLIN}; /* a negative fd is ignored */
  for (;;) {
    int n = poll(fds, (nfds_t)nports + 2, pidfd >= 0 ? -1 : 100);
    if (n < 0 && errno != EINTR) return;
    if (n > 0 && (fds[nports + 1].revents & POLLIN)) on_extra();
    if (pidfd >= 0 && (fds[nports].revents & POLLIN)) return;
    siginfo_t si = {0};
    if (pidfd < 0 && waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == pid) return;
    for (int k = 0; k < nports && n > 0; k++)
      if (fds[k].revents & POLLIN) pass_in(k);
  }
}

int publish_active(void) {
  return pair[0] >= 0;
}

int publish_serve(pid_t pid, int extra_fd, void (*on_extra)(void)) {
  if (pair[0] >= 0) {
    close(pair[1]); /* the bridge's end lives on in PROGRAM only */
    int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    serve(pid, pidfd, extra_fd, on_extra);
    if (pidfd >= 0) close(pidfd);
    for (int k = 0; k < nports; k++) close(ports[k].fd);
    close(pair[0]);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}
