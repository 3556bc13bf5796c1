/*
 * The network bridge inside the sandbox (bridge.h): 127.0.0.1:PORT in the sandbox's namespace → the host
 * proxy's Unix socket. One process, an epoll loop; each connection's bytes move by splice through a pipe,
 * or by copying where a socket pair cannot splice.
 */
#define _GNU_SOURCE
#include "bridge.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../common/compat.h"
#include "../common/errors.h"

#define BUF 65536
#define PIPE_BYTES (1 << 20)
struct half {
  char buf[BUF]; /* copy fallback */
  size_t len, off;
  int pipe[2];   /* splice path: bytes sit in the pipe between the two sockets */
  size_t inpipe;
  int eof;
};
struct conn {
  int fd[2];          /* 0: client (TCP), 1: proxy (Unix) */
  struct half dir[2]; /* dir[0]: client→proxy, dir[1]: proxy→client */
  int shut[2];        /* write side of fd[i] shut down */
  int copy;           /* splice unsupported: copy through buf */
};

static size_t pending(const struct half *h) { return h->inpipe + (h->len - h->off); }

static void update_events(int ep, struct conn *c) {
  for (int i = 0; i < 2; i++) {
    uint32_t e = 0;
    if (!c->dir[i].eof && pending(&c->dir[i]) == 0) e |= EPOLLIN;   /* room to read from fd[i] */
    if (pending(&c->dir[1 - i]) > 0) e |= EPOLLOUT;                  /* data waiting for fd[i] */
    struct epoll_event ev = {.events = e, .data.u64 = (uint64_t)(uintptr_t)c | (uint64_t)i};
    epoll_ctl(ep, EPOLL_CTL_MOD, c->fd[i], &ev);
  }
}

/* Moves what it can in one direction. Returns -1 on a hard error. */
static int move(struct conn *c, int i) {
  struct half *h = &c->dir[i];
  int from = c->fd[i], to = c->fd[1 - i];
  for (;;) {
    if (!c->copy) {
      if (h->inpipe > 0) {
        ssize_t w = splice(h->pipe[0], NULL, to, NULL, h->inpipe, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
        if (w < 0) return errno == EAGAIN ? 0 : -1;
        h->inpipe -= (size_t)w;
        if (h->inpipe > 0) return 0;
      }
      if (h->eof) return 0;
      ssize_t r = splice(from, NULL, h->pipe[1], NULL, PIPE_BYTES, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
      if (r == 0) {
        h->eof = 1;
        return 0;
      }
      if (r < 0) {
        if (errno == EAGAIN) return 0;
        if (errno == EINVAL) {
          c->copy = 1; /* this socket pair cannot splice: fall back to copying */
          continue;
        }
        return -1;
      }
      h->inpipe += (size_t)r;
      continue;
    }
    if (h->len > h->off) {
      ssize_t w = send(to, h->buf + h->off, h->len - h->off, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (w < 0) return (errno == EAGAIN || errno == EWOULDBLOCK) ? 0 : -1;
      h->off += (size_t)w;
      if (h->off < h->len) return 0;
      h->off = h->len = 0;
    }
    if (h->eof) return 0;
    ssize_t r = recv(from, h->buf, BUF, MSG_DONTWAIT);
    if (r == 0) {
      h->eof = 1;
      return 0;
    }
    if (r < 0) return (errno == EAGAIN || errno == EWOULDBLOCK) ? 0 : -1;
    h->len = (size_t)r;
    h->off = 0;
  }
}

/* Moves data both ways; returns 0 when the connection is finished. */
static int pump(int ep, struct conn *c) {
  for (int i = 0; i < 2; i++) {
    if (move(c, i) < 0) return 0;
    struct half *h = &c->dir[i];
    if (h->eof && pending(h) == 0 && !c->shut[1 - i]) {
      shutdown(c->fd[1 - i], SHUT_WR);
      c->shut[1 - i] = 1;
    }
  }
  if (c->dir[0].eof && c->dir[1].eof && pending(&c->dir[0]) == 0 && pending(&c->dir[1]) == 0) return 0;
  update_events(ep, c);
  return 1;
}

static void free_conn(struct conn *c) {
  close(c->fd[0]);
  close(c->fd[1]);
  for (int i = 0; i < 2; i++) {
    if (c->dir[i].pipe[0] >= 0) close(c->dir[i].pipe[0]);
    if (c->dir[i].pipe[1] >= 0) close(c->dir[i].pipe[1]);
  }
  free(c);
}

/* A connection accepted on LFD, connected to the proxy at ADDR and watched by EP (nothing on failure). */
static void accept_conn(int ep, int lfd, const struct sockaddr_un *addr) {
  int cfd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
  if (cfd < 0) return;
  int pfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (pfd < 0 || connect(pfd, (const struct sockaddr *)addr, sizeof *addr) < 0) {
    if (pfd >= 0) close(pfd);
    close(cfd);
    return;
  }
  fcntl(pfd, F_SETFL, fcntl(pfd, F_GETFL) | O_NONBLOCK);
  struct conn *c = calloc(1, sizeof *c);
  if (c == NULL) {
    close(cfd);
    close(pfd);
    return;
  }
  c->fd[0] = cfd;
  c->fd[1] = pfd;
  for (int i = 0; i < 2; i++) {
    if (pipe2(c->dir[i].pipe, O_NONBLOCK | O_CLOEXEC) < 0) {
      c->dir[i].pipe[0] = c->dir[i].pipe[1] = -1;
      c->copy = 1;
    } else {
      fcntl(c->dir[i].pipe[1], F_SETPIPE_SZ, PIPE_BYTES); /* best effort */
    }
  }
  for (int i = 0; i < 2; i++) {
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = (uint64_t)(uintptr_t)c | (uint64_t)i};
    epoll_ctl(ep, EPOLL_CTL_ADD, c->fd[i], &ev);
  }
}

static void bridge_loop(int lfd, const char *path) {
  signal(SIGPIPE, SIG_IGN);
  int ep = epoll_create1(EPOLL_CLOEXEC);
  if (ep < 0) _exit(1);
  struct epoll_event lev = {.events = EPOLLIN, .data.u64 = 0};
  epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &lev);
  struct sockaddr_un addr = {.sun_family = AF_UNIX};
  strncpy(addr.sun_path, path, sizeof addr.sun_path - 1);
  struct epoll_event events[64];
  for (;;) {
    int n = epoll_wait(ep, events, 64, -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      _exit(1);
    }
    for (int k = 0; k < n; k++) {
      if (events[k].data.u64 == 0) {
        accept_conn(ep, lfd, &addr);
        continue;
      }
      struct conn *c = (struct conn *)(uintptr_t)(events[k].data.u64 & ~(uint64_t)1);
      if (c == NULL) continue; /* freed earlier in this batch */
      if (!pump(ep, c)) {
        epoll_ctl(ep, EPOLL_CTL_DEL, c->fd[0], NULL);
        epoll_ctl(ep, EPOLL_CTL_DEL, c->fd[1], NULL);
        /* Later events in this batch may still point at c. */
        for (int j = k + 1; j < n; j++) {
          if ((struct conn *)(uintptr_t)(events[j].data.u64 & ~(uint64_t)1) == c) events[j].data.u64 = 1;
        }
        free_conn(c);
      }
    }
  }
}

void start_bridge(const char *path, int lfd) {
  pid_t child = fork();
  if (child < 0) die("fork bridge: %s", strerror(errno));
  if (child == 0) {
    /* Double fork: the bridge is adopted by the namespace's init, not by the program. */
    pid_t grandchild = fork();
    if (grandchild != 0) _exit(grandchild < 0 ? 1 : 0);
    setsid();
    /* Keep only the listening socket: the program's stdio pipes must not stay open in the bridge. */
    for (int fd = 0; fd < 3; fd++) {
      int null = open("/dev/null", O_RDWR);
      if (null >= 0 && null != fd) {
        dup2(null, fd);
        close(null);
      }
    }
    syscall(SYS_close_range, 3, lfd - 1, 0);
    syscall(SYS_close_range, lfd + 1, ~0U, 0);
    bridge_loop(lfd, path);
    _exit(0);
  }
  int status;
  waitpid(child, &status, 0);
  close(lfd);
}

int bridge_listen(long port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) die("bridge socket: %s", strerror(errno));
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(fd, (struct sockaddr *)&a, sizeof a) < 0) die("bridge bind 127.0.0.1:%ld: %s", port, strerror(errno));
  if (listen(fd, 512) < 0) die("bridge listen: %s", strerror(errno));
  return fd;
}
