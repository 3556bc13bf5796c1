/*
 * The refused-connection watcher (refused.h). The filter (classic BPF, run on the packet from its network
 * header) passes TCP segments with RST and ACK set, over IPv4 or IPv6 without extension headers; here a
 * reset with sequence number 0 is the kernel's answer to a SYN nothing listened for (RFC 793: a reset to
 * a segment without ACK takes SEQ 0). One socket per IP version, bound to its protocol on `lo`: packets
 * are seen as they arrive (an outgoing copy, were one seen, is skipped).
 */
#define _GNU_SOURCE
#include "refused.h"

#include <arpa/inet.h>
#include <linux/filter.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "dial.h"
#include "names.h"

#define MAX_REPORTED 256

static char reported[MAX_REPORTED][300];
static int nreported;

int refused_open(int ipv6) {
  static struct sock_filter code[] = {
      BPF_STMT(BPF_LD | BPF_B | BPF_ABS, 0),
      BPF_STMT(BPF_ALU | BPF_RSH | BPF_K, 4),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 4, 0, 5), /* IPv4, else 8 */
      BPF_STMT(BPF_LD | BPF_B | BPF_ABS, 9),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, IPPROTO_TCP, 0, 9),
      BPF_STMT(BPF_LDX | BPF_B | BPF_MSH, 0),
      BPF_STMT(BPF_LD | BPF_B | BPF_IND, 13),
      BPF_STMT(BPF_JMP | BPF_JA, 4), /* to the flags' test */
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 6, 0, 5), /* IPv6 */
      BPF_STMT(BPF_LD | BPF_B | BPF_ABS, 6),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, IPPROTO_TCP, 0, 3),
      BPF_STMT(BPF_LD | BPF_B | BPF_ABS, 40 + 13),
      BPF_STMT(BPF_ALU | BPF_AND | BPF_K, 0x14),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0x14, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, 0),
      BPF_STMT(BPF_RET | BPF_K, 128),
  };
  struct sock_fprog prog = {.len = sizeof code / sizeof code[0], .filter = code};
  int fd = socket(AF_PACKET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  /* One protocol, not ETH_P_ALL: packets are seen as they arrive only, with no copy made of each one that
   * leaves (a tap on every packet would slow every relayed byte on lo). */
  struct sockaddr_ll at = {.sll_family = AF_PACKET, .sll_protocol = htons(ipv6 ? ETH_P_IPV6 : ETH_P_IP),
                           .sll_ifindex = (int)if_nametoindex("lo")};
  /* The filter first, then the binding that starts the capture: nothing unfiltered is ever queued. */
  if (at.sll_ifindex <= 0 || setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof prog) < 0 ||
      bind(fd, (struct sockaddr *)&at, sizeof at) < 0) {
    close(fd);
    return -1;
  }
  return fd;
}

/* The target the reset in PKT (LEN bytes) answers for, into OUT: its source, `a.b.c.d:port` or
 * `[v6]:port`, or `name:port` for an allowed name's synthetic address; -1 when it is not the kernel's answer to a SYN, or is the sandbox's own loopback. */
static int target_of(const unsigned char *pkt, size_t len, char *out, size_t cap) {
  char text[INET6_ADDRSTRLEN];
  const unsigned char *tcp;
  if (len >= 20 && pkt[0] >> 4 == 4) {
    size_t ihl = (size_t)(pkt[0] & 15) * 4;
    if (ihl < 20 || len < ihl + 20 || (pkt[12] == 127 && pkt[13] == 0 && pkt[14] == 0 && pkt[15] == 1)) return -1;
    inet_ntop(AF_INET, pkt + 12, text, sizeof text);
    tcp = pkt + ihl;
    uint32_t addr = (uint32_t)pkt[12] << 24 | (uint32_t)pkt[13] << 16 | (uint32_t)pkt[14] << 8 | pkt[15];
    const char *name = names_lookup(addr); /* an allowed name's address: the name, as the proxy knows it */
    if (name != NULL && strlen(name) < sizeof text) snprintf(text, sizeof text, "%s", name);
  } else if (len >= 60 && pkt[0] >> 4 == 6) {
    if (memcmp(pkt + 8, &in6addr_loopback, 16) == 0) return -1;
    inet_ntop(AF_INET6, pkt + 8, text, sizeof text);
    tcp = pkt + 40;
  } else {
    return -1;
  }
  if (tcp[4] | tcp[5] | tcp[6] | tcp[7]) return -1; /* SEQ not 0: a reset of an open connection */
  unsigned port = (unsigned)tcp[0] << 8 | tcp[1];
  int n = snprintf(out, cap, pkt[0] >> 4 == 6 ? "[%s]:%u" : "%s:%u", text, port);
  return n > 0 && (size_t)n < cap ? 0 : -1;
}

static void report(const struct bridge_ctx *b, const char *target) {
  for (int i = 0; i < nreported; i++)
    if (strcmp(reported[i], target) == 0) return;
  if (nreported >= MAX_REPORTED) return; /* the run's record holds enough of them */
  snprintf(reported[nreported++], sizeof reported[0], "%s", target);
  int fd = dial_proxy(b->proxy_path);
  if (fd < 0) return;
  char line[340];
  int n = snprintf(line, sizeof line, "ALEPH port-refused %s\r\n", target);
  if (n > 0 && (size_t)n < sizeof line) send(fd, line, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT);
  close(fd);
}

void refused_event(const struct bridge_ctx *b, int fd) {
  unsigned char pkt[128];
  for (int k = 0; k < 256; k++) {
    struct sockaddr_ll from;
    socklen_t flen = sizeof from;
    ssize_t got = recvfrom(fd, pkt, sizeof pkt, MSG_DONTWAIT, (struct sockaddr *)&from, &flen);
    if (got < 0) return;
    char target[300];
    if (from.sll_pkttype == PACKET_OUTGOING || target_of(pkt, (size_t)got, target, sizeof target) < 0) continue;
    if (b->proxy_path != NULL) report(b, target);
  }
}
