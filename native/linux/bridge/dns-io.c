/*
 * The resolver's sockets (dns-io.h). Answers are small and go out at once; a TCP client whose answer
 * does not fit in its socket buffer, or that sends a message longer than DNS_MAX_MESSAGE, is closed.
 */
#define _GNU_SOURCE
#include "dns-io.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "dns.h"
#include "resolver.h"

struct dns_tcp {
  struct watch w; /* W_DNS_TCP */
  int fd;
  size_t len;
  unsigned char buf[2 + DNS_MAX_MESSAGE];
};

void dns_udp_event(const struct bridge_ctx *b, const struct name_rules *rules, int fd) {
  unsigned char in[DNS_MAX_MESSAGE], out[DNS_MAX_MESSAGE];
  for (int i = 0; i < 64; i++) {
    struct sockaddr_in6 from; /* room for either family */
    socklen_t flen = sizeof from;
    ssize_t n = recvfrom(fd, in, sizeof in, MSG_DONTWAIT, (struct sockaddr *)&from, &flen);
    if (n < 0) return;
    size_t m = resolver_answer(rules, b->proxy_path, in, (size_t)n, out, 512);
    if (m > 0) sendto(fd, out, m, MSG_DONTWAIT, (struct sockaddr *)&from, flen);
  }
}

void dns_tcp_accept(const struct bridge_ctx *b, int lfd) {
  for (;;) {
    int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return;
    struct dns_tcp *t = calloc(1, sizeof *t);
    if (t == NULL || watch_add(b->ep, fd, &t->w, EPOLLIN) < 0) {
      free(t);
      close(fd);
      continue;
    }
    t->w.kind = W_DNS_TCP;
    t->fd = fd;
  }
}

static void dns_tcp_close(const struct bridge_ctx *b, struct dns_tcp *t) {
  watch_close(b->ep, t->fd);
  retire(&t->w, t);
}

/* Answers each complete message at the start of T's buffer; -1 when T must be closed. */
static int answer_buffered(const struct bridge_ctx *b, const struct name_rules *rules, struct dns_tcp *t) {
  unsigned char out[2 + DNS_MAX_MESSAGE];
  while (t->len >= 2) {
    size_t mlen = (size_t)t->buf[0] << 8 | t->buf[1];
    if (mlen == 0 || mlen > DNS_MAX_MESSAGE) return -1;
    if (t->len < 2 + mlen) return 0;
    size_t m = resolver_answer(rules, b->proxy_path, t->buf + 2, mlen, out + 2, DNS_MAX_MESSAGE);
    if (m > 0) {
      out[0] = (unsigned char)(m >> 8);
      out[1] = (unsigned char)m;
      if (send(t->fd, out, m + 2, MSG_NOSIGNAL | MSG_DONTWAIT) != (ssize_t)(m + 2)) return -1;
    }
    t->len -= 2 + mlen;
    memmove(t->buf, t->buf + 2 + mlen, t->len);
  }
  return 0;
}

void dns_tcp_event(const struct bridge_ctx *b, const struct name_rules *rules, struct watch *w) {
  struct dns_tcp *t = (struct dns_tcp *)w;
  for (;;) {
    ssize_t n = recv(t->fd, t->buf + t->len, sizeof t->buf - t->len, MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (n <= 0) {
      dns_tcp_close(b, t);
      return;
    }
    t->len += (size_t)n;
    if (answer_buffered(b, rules, t) < 0 || t->len == sizeof t->buf) {
      dns_tcp_close(b, t);
      return;
    }
  }
}
