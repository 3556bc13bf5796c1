/*
 * Published ports, the sandbox's end (publish.h). Each message is two bytes, the port (network order),
 * with one descriptor: the host connection. Anything else (no descriptor, several, a short message) is
 * dropped, closing what came with it.
 */
#define _GNU_SOURCE
#include "publish.h"

#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "dial.h"

/* The descriptors that came with MSG, each closed but the first, which is returned (-1: none). */
static int take_fd(struct msghdr *msg) {
  int keep = -1;
  for (struct cmsghdr *c = CMSG_FIRSTHDR(msg); c != NULL; c = CMSG_NXTHDR(msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t k = 0; k < n; k++) {
      int fd;
      memcpy(&fd, CMSG_DATA(c) + k * sizeof(int), sizeof fd);
      if (keep < 0) keep = fd;
      else close(fd);
    }
  }
  return keep;
}

int publish_event(const struct bridge_ctx *b, int fd) {
  for (;;) {
    unsigned char port[2];
    union {
      struct cmsghdr align;
      char buf[CMSG_SPACE(4 * sizeof(int))];
    } control;
    struct iovec iov = {.iov_base = port, .iov_len = sizeof port};
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.buf, .msg_controllen = sizeof control.buf};
    ssize_t n = recvmsg(fd, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    if (n == 0) return 0;
    if (n < 0) return 1;
    int host = take_fd(&msg);
    if (host < 0) continue;
    if (n != 2 || (msg.msg_flags & MSG_CTRUNC)) {
      close(host);
      continue;
    }
    fcntl(host, F_SETFL, fcntl(host, F_GETFL) | O_NONBLOCK);
    dial_published(b, host, (unsigned)port[0] << 8 | port[1]);
  }
}
