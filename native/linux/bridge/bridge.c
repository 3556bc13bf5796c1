/*
 * The network bridge (bridge.h): its sockets, its process and its event loop. Each listening socket's
 * events go to what it is for; connections are relayed by relay.c, made by dial.c, and DNS is answered by
 * dns-io.c and resolver.c.
 */
#define _GNU_SOURCE
#include "bridge.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../common/closefrom.h"
#include "../common/compat.h"
#include "../common/errors.h"
#include "dial.h"
#include "dns-io.h"
#include "listen.h"
#include "loop.h"
#include "publish.h"
#include "refused.h"
#include "relay.h"
#include "routes.h"

#define DNS_ADDR 0x7f000035u /* 127.0.0.53 */
#define MAX_WATCHED (BRIDGE_MAX_EGRESS + 6)

struct listener {
  struct watch w;
  int fd;
};

int bridge_wanted(const struct bridge_plan *p) { return p->proxy_path != NULL || p->publish_fd >= 0; }

void bridge_open(struct bridge_plan *p) {
  p->proxy_lfd = p->dns_udp = p->dns_tcp = p->refused4 = p->refused6 = -1;
  for (int i = 0; i < p->negress; i++) p->egress_lfd[i] = -1;
  if (p->proxy_path == NULL) return;
  p->proxy_lfd = listen_tcp(INADDR_LOOPBACK, p->proxy_port);
  if (p->dns) {
    p->dns_udp = bind_udp(DNS_ADDR, 53);
    p->dns_tcp = listen_tcp(DNS_ADDR, 53);
  }
  /* The transparent path, egress ports or not (no network: an empty allowlist has none, and every
   * connection and datagram is refused by the kernel and reported). */
  if (p->negress > 0 || p->dns) {
    (void)routes_all_local(); /* without them only 127.0.0.0/8 addresses are taken (routes.h) */
    p->refused4 = refused_open(0);
    p->refused6 = refused_open(1);
  }
  for (int i = 0; i < p->negress; i++) p->egress_lfd[i] = listen_tcp_any(p->egress_ports[i]);
}

/* Every descriptor of P, into FDS; how many. */
static int plan_fds(const struct bridge_plan *p, int *fds) {
  int n = 0;
  int single[] = {p->proxy_lfd, p->dns_udp, p->dns_tcp, p->publish_fd, p->refused4, p->refused6};
  for (size_t i = 0; i < sizeof single / sizeof single[0]; i++)
    if (single[i] >= 0) fds[n++] = single[i];
  for (int i = 0; i < p->negress; i++)
    if (p->egress_lfd[i] >= 0) fds[n++] = p->egress_lfd[i];
  return n;
}

/* Where the accepted FD was headed, as the proxy's CONNECT takes it, into OUT (CAP bytes): the name behind
 * a synthetic address the resolver gave out, or the address itself (`10.1.2.3`, `[2001:db8::1]`), which
 * the proxy checks against the allowlist's address entries; its port in *PORT. -1 when unknown. */
static int destination(int fd, char *out, size_t cap, unsigned *port) {
  struct sockaddr_storage local;
  socklen_t len = sizeof local;
  if (getsockname(fd, (struct sockaddr *)&local, &len) < 0) return -1;
  struct in_addr v4;
  if (local.ss_family == AF_INET) {
    v4 = ((struct sockaddr_in *)&local)->sin_addr;
    *port = ntohs(((struct sockaddr_in *)&local)->sin_port);
  } else if (local.ss_family == AF_INET6) {
    const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)&local;
    *port = ntohs(a->sin6_port);
    if (!IN6_IS_ADDR_V4MAPPED(&a->sin6_addr)) {
      char text[INET6_ADDRSTRLEN];
      if (inet_ntop(AF_INET6, &a->sin6_addr, text, sizeof text) == NULL) return -1;
      return snprintf(out, cap, "[%s]", text) < (int)cap ? 0 : -1;
    }
    memcpy(&v4, a->sin6_addr.s6_addr + 12, 4);
  } else {
    return -1;
  }
  const char *name = names_lookup(ntohl(v4.s_addr));
  if (name != NULL) return snprintf(out, cap, "%s", name) < (int)cap ? 0 : -1;
  return inet_ntop(AF_INET, &v4, out, (socklen_t)cap) == NULL ? -1 : 0;
}

/* A transparent connection accepted on LFD: `CONNECT` to where it was headed, which the proxy decides
 * (and records when it refuses). */
static void egress_accept(const struct bridge_ctx *b, int lfd) {
  for (;;) {
    int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return;
    char where[300];
    unsigned port = 0;
    if (destination(fd, where, sizeof where, &port) < 0) close_reset(fd);
    else dial_connect(b, fd, where, port);
  }
}

/* A connection to the proxy variables' port, accepted on LFD: relayed to the proxy as it is. */
static void proxy_accept(const struct bridge_ctx *b, int lfd) {
  for (;;) {
    int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return;
    int pfd = dial_proxy(b->proxy_path);
    if (pfd < 0) close_reset(fd);
    else relay_start(b->ep, fd, pfd);
  }
}

static void dispatch(const struct bridge_ctx *b, const struct bridge_plan *p, struct watch *w, uint32_t events) {
  if (w->kind == W_SIDE) relay_event(b->ep, w);
  else if (w->kind == W_DIAL || w->kind == W_DIAL_TIMER) dial_event(b, w, events);
  else if (w->kind == W_DNS_TCP) dns_tcp_event(b, &p->names, w);
  if (w->kind < W_LISTEN_PROXY || w->kind == W_DNS_TCP) return;
  int fd = ((struct listener *)w)->fd;
  switch (w->kind) {
  case W_LISTEN_PROXY: proxy_accept(b, fd); break;
  case W_LISTEN_EGRESS: egress_accept(b, fd); break;
  case W_DNS_UDP: dns_udp_event(b, &p->names, fd); break;
  case W_LISTEN_DNS: dns_tcp_accept(b, fd); break;
  case W_REFUSED: refused_event(b, fd); break;
  case W_PUBLISH:
    if (!publish_event(b, fd)) watch_close(b->ep, fd); /* the launcher is gone */
    break;
  default: break;
  }
}

/* Watches for P's sockets, in LS (room for MAX_WATCHED). */
static void watch_plan(int ep, const struct bridge_plan *p, struct listener *ls) {
  int n = 0;
  struct {
    int fd;
    enum watch_kind kind;
  } all[MAX_WATCHED] = {{p->proxy_lfd, W_LISTEN_PROXY}, {p->dns_udp, W_DNS_UDP}, {p->dns_tcp, W_LISTEN_DNS},
                        {p->publish_fd, W_PUBLISH}, {p->refused4, W_REFUSED}, {p->refused6, W_REFUSED}};
  for (int i = 0; i < p->negress; i++) all[6 + i].fd = p->egress_lfd[i], all[6 + i].kind = W_LISTEN_EGRESS;
  for (int i = 0; i < 6 + p->negress; i++) {
    if (all[i].fd < 0) continue;
    ls[n] = (struct listener){.w = {all[i].kind}, .fd = all[i].fd};
    if (watch_add(ep, all[i].fd, &ls[n].w, EPOLLIN) < 0) _exit(1);
    n++;
  }
}

static void bridge_loop(const struct bridge_plan *p) {
  signal(SIGPIPE, SIG_IGN);
  struct bridge_ctx b = {.ep = epoll_create1(EPOLL_CLOEXEC), .proxy_path = p->proxy_path};
  if (b.ep < 0) _exit(1);
  struct listener ls[MAX_WATCHED];
  watch_plan(b.ep, p, ls);
  struct epoll_event events[64];
  for (;;) {
    int n = epoll_wait(b.ep, events, 64, -1);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) _exit(1);
    for (int k = 0; k < n; k++) dispatch(&b, p, events[k].data.ptr, events[k].events);
    retired_free();
  }
}

/* In the bridge: stdio on /dev/null, every descriptor closed but the N of FDS. */
static void keep_only(const int *fds, int n) {
  for (int fd = 0; fd < 3; fd++) {
    int null = open("/dev/null", O_RDWR);
    if (null >= 0 && null != fd) {
      dup2(null, fd);
      close(null);
    }
  }
  int max = 0;
  for (int i = 0; i < n; i++)
    if (fds[i] > max) max = fds[i];
  for (int fd = 3; fd <= max; fd++) {
    int kept = 0;
    for (int i = 0; i < n; i++) kept |= fds[i] == fd;
    if (!kept) close(fd);
  }
  close_fds((unsigned)max + 1, ~0U);
}

void start_bridge(struct bridge_plan *p) {
  int fds[MAX_WATCHED];
  int n = plan_fds(p, fds);
  pid_t child = fork();
  if (child < 0) die("fork bridge: %s", strerror(errno));
  if (child == 0) {
    /* Double fork: the bridge is adopted by the namespace's init, not by the program. */
    status_channel(-1); /* the bridge never speaks for the helper's set-up */
    pid_t grandchild = fork();
    if (grandchild != 0) _exit(grandchild < 0 ? 1 : 0);
    setsid();
    keep_only(fds, n);
    bridge_loop(p);
    _exit(0);
  }
  int status;
  waitpid(child, &status, 0);
  for (int i = 0; i < n; i++) close(fds[i]);
}
