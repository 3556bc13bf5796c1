/*
 * Relayed connections (relay.h). Each direction has a pipe: splice moves bytes from one socket into it and
 * out to the other without copying them through this process; a socket pair that cannot splice falls back
 * to a buffer. A direction whose source ended shuts the other socket's write side once drained.
 */
#define _GNU_SOURCE
#include "relay.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#define BUF 65536
#define PIPE_BYTES (1 << 20)

struct half {
  char buf[BUF]; /* copy fallback */
  size_t len, off;
  int pipe[2]; /* splice path: bytes sit in the pipe between the two sockets */
  size_t inpipe;
  int eof;
};

struct side {
  struct watch w; /* W_SIDE */
  struct conn *c;
};

struct conn {
  struct side side[2];
  int fd[2];          /* the two sockets */
  struct half dir[2]; /* dir[i]: from fd[i] to fd[1-i] */
  int shut[2];        /* write side of fd[i] shut down */
  int copy;           /* splice unsupported: copy through buf */
};

static size_t pending(const struct half *h) { return h->inpipe + (h->len - h->off); }

static void update_events(int ep, struct conn *c) {
  for (int i = 0; i < 2; i++) {
    uint32_t e = 0;
    if (!c->dir[i].eof && pending(&c->dir[i]) == 0) e |= EPOLLIN; /* room to read from fd[i] */
    if (pending(&c->dir[1 - i]) > 0) e |= EPOLLOUT;                /* data waiting for fd[i] */
    watch_mod(ep, c->fd[i], &c->side[i].w, e);
  }
}

/* One direction through the pipe; -1 on a hard error, 1 when splice cannot be used here. */
static int move_splice(struct half *h, int from, int to) {
  for (;;) {
    if (h->inpipe > 0) {
      ssize_t w = splice(h->pipe[0], NULL, to, NULL, h->inpipe, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
      if (w < 0) return errno == EAGAIN ? 0 : -1;
      h->inpipe -= (size_t)w;
      if (h->inpipe > 0) return 0;
    }
    if (h->eof) return 0;
    ssize_t r = splice(from, NULL, h->pipe[1], NULL, PIPE_BYTES, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
    if (r == 0) h->eof = 1;
    if (r == 0) return 0;
    if (r < 0) return errno == EAGAIN ? 0 : errno == EINVAL ? 1 : -1;
    h->inpipe += (size_t)r;
  }
}

/* One direction through the buffer; -1 on a hard error. */
static int move_copy(struct half *h, int from, int to) {
  for (;;) {
    if (h->len > h->off) {
      ssize_t w = send(to, h->buf + h->off, h->len - h->off, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (w < 0) return (errno == EAGAIN || errno == EWOULDBLOCK) ? 0 : -1;
      h->off += (size_t)w;
      if (h->off < h->len) return 0;
      h->off = h->len = 0;
    }
    if (h->eof) return 0;
    ssize_t r = recv(from, h->buf, BUF, MSG_DONTWAIT);
    if (r == 0) h->eof = 1;
    if (r == 0) return 0;
    if (r < 0) return (errno == EAGAIN || errno == EWOULDBLOCK) ? 0 : -1;
    h->len = (size_t)r;
    h->off = 0;
  }
}

static int move(struct conn *c, int i) {
  struct half *h = &c->dir[i];
  if (!c->copy) {
    int r = move_splice(h, c->fd[i], c->fd[1 - i]);
    if (r <= 0) return r;
    c->copy = 1; /* this socket pair cannot splice: copy from now on (nothing sits in the pipe) */
  }
  return move_copy(h, c->fd[i], c->fd[1 - i]);
}

static void finish(int ep, struct conn *c) {
  for (int i = 0; i < 2; i++) {
    watch_close(ep, c->fd[i]);
    for (int k = 0; k < 2; k++)
      if (c->dir[i].pipe[k] >= 0) close(c->dir[i].pipe[k]);
    c->side[i].w.kind = W_DEAD;
  }
  retire(&c->side[0].w, c);
}

void relay_event(int ep, struct watch *w) {
  struct conn *c = ((struct side *)w)->c;
  for (int i = 0; i < 2; i++) {
    if (move(c, i) < 0) {
      finish(ep, c);
      return;
    }
    struct half *h = &c->dir[i];
    if (h->eof && pending(h) == 0 && !c->shut[1 - i]) {
      shutdown(c->fd[1 - i], SHUT_WR);
      c->shut[1 - i] = 1;
    }
  }
  if (c->dir[0].eof && c->dir[1].eof && pending(&c->dir[0]) == 0 && pending(&c->dir[1]) == 0) {
    finish(ep, c);
    return;
  }
  update_events(ep, c);
}

void relay_start(int ep, int a, int b) {
  struct conn *c = calloc(1, sizeof *c);
  if (c == NULL) {
    close(a);
    close(b);
    return;
  }
  c->fd[0] = a;
  c->fd[1] = b;
  for (int i = 0; i < 2; i++) {
    c->side[i] = (struct side){.w = {W_SIDE}, .c = c};
    if (pipe2(c->dir[i].pipe, O_NONBLOCK | O_CLOEXEC) < 0) {
      c->dir[i].pipe[0] = c->dir[i].pipe[1] = -1;
      c->copy = 1;
    } else {
      fcntl(c->dir[i].pipe[1], F_SETPIPE_SZ, PIPE_BYTES); /* best effort */
    }
  }
  for (int i = 0; i < 2; i++) watch_add(ep, c->fd[i], &c->side[i].w, EPOLLIN);
}
