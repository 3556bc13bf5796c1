/*
 * The network bridge inside the sandbox: one process, forked by the helper before the program runs, that
 * owns the sandbox's way out and in:
 *   - 127.0.0.1:PORT (--bridge PORT:PATH), what the proxy variables name, relayed as is to the managed
 *     proxy's Unix socket PATH;
 *   - the resolver on 127.0.0.53:53 (--dns on, --dns-allow/--dns-deny PATTERN): resolver.c;
 *   - transparent egress (--egress-port PORT): every address routes to the namespace's loopback
 *     (routes.c), and a connection on such a port becomes `CONNECT name:PORT` on the proxy's socket for an
 *     allowed name's synthetic address, `CONNECT address:PORT` for any other address: dial.c;
 *   - refusals on the transparent path (with --dns on, egress ports or none: no network is an empty
 *     allowlist without any): connections to a port outside the egress ports, which the kernel resets,
 *     and datagrams to anything but the resolver, reported to the proxy: refused.c;
 *   - published ports (--publish-fd FD): host connections the launcher passes in: publish.c.
 */
#ifndef ALEPH_BRIDGE_BRIDGE_H
#define ALEPH_BRIDGE_BRIDGE_H

#include "names.h"

#define BRIDGE_MAX_EGRESS 64

struct bridge_plan {
  long proxy_port;         /* --bridge PORT:PATH */
  const char *proxy_path;  /* NULL: no egress at all */
  long egress_ports[BRIDGE_MAX_EGRESS];
  int negress;
  int dns;                 /* --dns on */
  struct name_rules names; /* what the resolver answers for */
  int publish_fd;          /* --publish-fd, or -1 */
  int own_netns;           /* --own-netns on: the helper makes a network namespace first (helper/netns.c) */
  /* The sockets bridge_open made (-1: none). */
  int proxy_lfd, dns_udp, dns_tcp, refused4, refused6;
  int egress_lfd[BRIDGE_MAX_EGRESS];
};

/* Whether the plan needs a bridge process at all. */
int bridge_wanted(const struct bridge_plan *p);
/* Makes every listening socket of P, while the helper still may bind ports below 1024 (before it drops
 * its identity): the sockets belong to this network namespace, whatever the bridge's privileges later. */
void bridge_open(struct bridge_plan *p);
/* Forks the bridge (adopted by the namespace's init, not the program) with P's descriptors, and closes
 * them here. */
void start_bridge(struct bridge_plan *p);

#endif
