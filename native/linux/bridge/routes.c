/*
 * The catch-all local routes (routes.h), over rtnetlink: RTM_NEWROUTE of type RTN_LOCAL, scope host, in
 * the local table, out of `lo`, as `ip route add local 0.0.0.0/0 dev lo table local` does.
 */
#define _GNU_SOURCE
#include "routes.h"

#include <errno.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>


/* Adds `local FAMILY/0 dev lo table local`; 0, or the errno the kernel (or the socket) answered. */
static int add_local_route(int family) {
  int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
  if (fd < 0) return errno;
  struct {
    struct nlmsghdr n;
    struct rtmsg r;
    char attrs[RTA_SPACE(sizeof(int))];
  } req;
  memset(&req, 0, sizeof req);
  req.n.nlmsg_len = NLMSG_LENGTH(sizeof req.r);
  req.n.nlmsg_type = RTM_NEWROUTE;
  req.n.nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_REPLACE;
  req.n.nlmsg_seq = 1;
  req.r = (struct rtmsg){.rtm_family = (unsigned char)family, .rtm_table = RT_TABLE_LOCAL,
                         .rtm_protocol = RTPROT_BOOT, .rtm_scope = RT_SCOPE_HOST, .rtm_type = RTN_LOCAL};
  struct rtattr *oif = (struct rtattr *)((char *)&req + NLMSG_ALIGN(req.n.nlmsg_len));
  oif->rta_type = RTA_OIF;
  oif->rta_len = RTA_LENGTH(sizeof(int));
  int lo = (int)if_nametoindex("lo");
  memcpy(RTA_DATA(oif), &lo, sizeof lo);
  req.n.nlmsg_len = NLMSG_ALIGN(req.n.nlmsg_len) + RTA_LENGTH(sizeof(int));
  struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
  int err = 0;
  if (lo <= 0) err = ENODEV;
  else if (sendto(fd, &req, req.n.nlmsg_len, 0, (struct sockaddr *)&kernel, sizeof kernel) < 0) err = errno;
  else {
    char buf[512];
    ssize_t got = recv(fd, buf, sizeof buf, 0);
    struct nlmsghdr *h = (struct nlmsghdr *)buf;
    if (got < 0) err = errno;
    else if (got < (ssize_t)NLMSG_LENGTH(sizeof(struct nlmsgerr)) || h->nlmsg_type != NLMSG_ERROR) err = EPROTO;
    else err = -((struct nlmsgerr *)NLMSG_DATA(h))->error;
  }
  close(fd);
  return err;
}

int routes_all_local(void) {
  int v4 = add_local_route(AF_INET);
  add_local_route(AF_INET6); /* no IPv6 in this namespace: nothing to catch */
  return v4 == 0 ? 0 : -1;
}
