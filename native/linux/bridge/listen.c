/*
 * The bridge's listening sockets (listen.h): nonblocking, close-on-exec, SO_REUSEADDR (a session's kept
 * network namespace may still hold a previous run's connections). A port still in use is waited for, a
 * bounded while: the previous run's bridge in a session's kept namespace may still be dying (bwrap reports
 * the program's exit before its PID namespace is gone, and the namespace goes back to the pool then).
 */
#define _GNU_SOURCE
#include "listen.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "../common/errors.h"

#define BIND_TRIES 200 /* 10 ms apart: 2 s */

/* bind(2), again while the address is in use, at most BIND_TRIES times; 0 or -1 (errno set). */
static int bind_waiting(int fd, const struct sockaddr *a, socklen_t len) {
  for (int i = 0;; i++) {
    if (bind(fd, a, len) == 0) return 0;
    if (errno != EADDRINUSE || i + 1 >= BIND_TRIES) return -1;
    struct timespec pause = {.tv_sec = 0, .tv_nsec = 10 * 1000 * 1000};
    nanosleep(&pause, NULL);
  }
}

static int bound(int type, uint32_t addr, long port) {
  const char *what = type == SOCK_STREAM ? "TCP" : "UDP";
  int fd = socket(AF_INET, type | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) die("bridge: %s socket: %s", what, strerror(errno));
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  a.sin_addr.s_addr = htonl(addr);
  if (bind_waiting(fd, (struct sockaddr *)&a, sizeof a) < 0) {
    char text[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &a.sin_addr, text, sizeof text);
    die("bridge: cannot bind %s %s:%ld in the sandbox's network namespace: %s", what, text, port, strerror(errno));
  }
  return fd;
}

int listen_tcp(uint32_t addr, long port) {
  int fd = bound(SOCK_STREAM, addr, port);
  if (listen(fd, 512) < 0) die("bridge: listen on port %ld: %s", port, strerror(errno));
  return fd;
}

int listen_tcp_any(long port) {
  int fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0 && errno == EAFNOSUPPORT) return listen_tcp(INADDR_ANY, port);
  if (fd < 0) die("bridge: TCP socket: %s", strerror(errno));
  int one = 1, zero = 0;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
  struct sockaddr_in6 a = {.sin6_family = AF_INET6, .sin6_port = htons((uint16_t)port), .sin6_addr = IN6ADDR_ANY_INIT};
  if (bind_waiting(fd, (struct sockaddr *)&a, sizeof a) < 0) {
    /* IPv6 switched off in this namespace (disable_ipv6), or a network stack without dual-stack sockets:
     * the IPv4 socket alone, which dies naming the port if that fails too. */
    close(fd);
    return listen_tcp(INADDR_ANY, port);
  }
  if (listen(fd, 512) < 0) die("bridge: listen on port %ld: %s", port, strerror(errno));
  return fd;
}

int bind_udp(uint32_t addr, long port) { return bound(SOCK_DGRAM, addr, port); }
