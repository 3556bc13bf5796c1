/*
 * Dials (dial.h). A transparent connection's tunnel is asked for with an HTTP CONNECT on the proxy's Unix
 * socket; the reply head is read with MSG_PEEK first, so exactly its bytes are taken and whatever the
 * upstream sends after it stays in the socket for the relay. The client's own bytes (a TLS ClientHello
 * with its SNI, an HTTP request) wait in its socket until the tunnel stands, then pass through untouched.
 * A refusal reaches a client that spoke HTTP (its first byte a letter) as the proxy's own reply, whose
 * status line says why (`403 Forbidden by aleph-proxy: …`); any other client sees a reset, and one that
 * has said nothing a second after the refusal (a protocol where the server speaks first) too.
 */
#define _GNU_SOURCE
#include "dial.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <unistd.h>

#include "relay.h"

#define HEAD_MAX 4096

struct dial {
  struct watch w;       /* W_DIAL */
  struct watch timer_w; /* W_DIAL_TIMER */
  int client;           /* the accepted client, or the host connection */
  int other;            /* the proxy connection, or the connection to the published port */
  int timer;            /* refused before the client said anything: how long to wait for it, or -1 */
  int published;
};

void close_reset(int fd) {
  struct linger l = {.l_onoff = 1, .l_linger = 0};
  setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
  close(fd);
}

int dial_proxy(const char *path) {
  struct sockaddr_un addr = {.sun_family = AF_UNIX};
  if (path == NULL || strlen(path) >= sizeof addr.sun_path) return -1;
  strcpy(addr.sun_path, path);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return -1;
  /* A Unix stream connect completes at once or fails (EAGAIN: the backlog is full). */
  if (connect(fd, (const struct sockaddr *)&addr, sizeof addr) < 0) {
    close(fd);
    return -1;
  }
  return fd;
}

/* Ends D: its proxy connection and timer closed, its client reset (RESET) or closed. */
static void dial_end(const struct bridge_ctx *b, struct dial *d, int reset) {
  watch_close(b->ep, d->other);
  watch_close(b->ep, d->timer);
  epoll_ctl(b->ep, EPOLL_CTL_DEL, d->client, NULL);
  if (reset) close_reset(d->client);
  else close(d->client);
  d->timer_w.kind = W_DEAD;
  retire(&d->w, d);
}

static void dial_fail(const struct bridge_ctx *b, struct dial *d) { dial_end(b, d, 1); }

static struct dial *dial_new(const struct bridge_ctx *b, int client, int other, int published, uint32_t events) {
  struct dial *d = calloc(1, sizeof *d);
  if (d == NULL || watch_add(b->ep, other, &d->w, events) < 0) {
    free(d);
    close(other);
    close_reset(client);
    return NULL;
  }
  *d = (struct dial){.w = {W_DIAL}, .timer_w = {W_DIAL_TIMER}, .client = client, .other = other, .timer = -1, .published = published};
  return d;
}

void dial_connect(const struct bridge_ctx *b, int client, const char *name, unsigned port) {
  int fd = dial_proxy(b->proxy_path);
  char req[600];
  int n = snprintf(req, sizeof req, "CONNECT %s:%u HTTP/1.1\r\nHost: %s:%u\r\n\r\n", name, port, name, port);
  if (fd < 0 || n <= 0 || (size_t)n >= sizeof req || send(fd, req, (size_t)n, MSG_NOSIGNAL) != n) {
    if (fd >= 0) close(fd);
    close_reset(client);
    return;
  }
  dial_new(b, client, fd, 0, EPOLLIN);
}

void dial_published(const struct bridge_ctx *b, int host, unsigned port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd < 0 || (connect(fd, (struct sockaddr *)&a, sizeof a) < 0 && errno != EINPROGRESS)) {
    if (fd >= 0) close(fd);
    close_reset(host);
    return;
  }
  dial_new(b, host, fd, 1, EPOLLOUT);
}

/* The proxy's reply to CONNECT: 1 when it is a complete 2xx head (taken off the socket), 0 when more is
 * needed, 2 for a complete refusal (left in the socket), -1 for a broken reply. */
static int read_reply(int fd) {
  char head[HEAD_MAX + 1];
  ssize_t n = recv(fd, head, HEAD_MAX, MSG_PEEK);
  if (n <= 0) return n < 0 && errno == EAGAIN ? 0 : -1;
  head[n] = '\0';
  char *end = strstr(head, "\r\n\r\n");
  if (end == NULL) return n == HEAD_MAX ? -1 : 0;
  if (strncmp(head, "HTTP/1.", 7) != 0 || head[8] != ' ') return -1;
  if (head[9] != '2') return 2;
  size_t len = (size_t)(end - head) + 4;
  return recv(fd, head, len, 0) == (ssize_t)len ? 1 : -1;
}

/* Waits (a second at most) for a refused client that has not said anything yet. */
static void await_client(const struct bridge_ctx *b, struct dial *d) {
  struct itimerspec second = {.it_value = {.tv_sec = 1}};
  d->timer = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  if (d->timer < 0 || timerfd_settime(d->timer, 0, &second, NULL) < 0 || watch_add(b->ep, d->timer, &d->timer_w, EPOLLIN) < 0 ||
      watch_add(b->ep, d->client, &d->w, EPOLLIN | EPOLLRDHUP) < 0) {
    dial_fail(b, d);
    return;
  }
  epoll_ctl(b->ep, EPOLL_CTL_DEL, d->other, NULL); /* the reply waits in it */
}

/* The refusal in D's proxy connection, passed on to a client that spoke HTTP (its first byte a letter);
 * any other is reset. A client that has said nothing yet is waited for. */
static void refuse(const struct bridge_ctx *b, struct dial *d) {
  unsigned char first;
  ssize_t got = recv(d->client, &first, 1, MSG_PEEK | MSG_DONTWAIT);
  if (got < 0 && errno == EAGAIN && d->timer < 0) {
    await_client(b, d);
    return;
  }
  if (got != 1 || !((first | 0x20) >= 'a' && (first | 0x20) <= 'z')) {
    dial_fail(b, d);
    return;
  }
  char buf[HEAD_MAX];
  ssize_t n = recv(d->other, buf, sizeof buf, MSG_DONTWAIT);
  char sink[HEAD_MAX];
  while (recv(d->client, sink, sizeof sink, MSG_DONTWAIT) > 0) {
  } /* what it sent is read, so closing it sends no reset over the reply */
  if (n > 0) send(d->client, buf, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT);
  shutdown(d->client, SHUT_WR);
  dial_end(b, d, 0);
}

void dial_event(const struct bridge_ctx *b, struct watch *w, uint32_t events) {
  if (w->kind == W_DIAL_TIMER) {
    dial_fail(b, (struct dial *)((char *)w - offsetof(struct dial, timer_w))); /* it said nothing */
    return;
  }
  struct dial *d = (struct dial *)w;
  if (d->timer >= 0) {
    refuse(b, d); /* the refused client spoke, or hung up */
    return;
  }
  int ok;
  if (d->published) {
    int err = 0;
    socklen_t len = sizeof err;
    ok = (events & EPOLLOUT) && getsockopt(d->other, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0 ? 1 : -1;
  } else {
    ok = read_reply(d->other);
  }
  if (ok == 0) return;
  if (ok == 2) {
    refuse(b, d);
    return;
  }
  if (ok < 0) {
    dial_fail(b, d);
    return;
  }
  epoll_ctl(b->ep, EPOLL_CTL_DEL, d->other, NULL);
  relay_start(b->ep, d->client, d->other);
  retire(&d->w, d);
}
