/*
 * The refused-connection watcher (refused.h). The filter (classic BPF, run on the packet from its network
 * header) passes TCP segments with RST and ACK set, and ICMP and ICMPv6 messages, over IPv4 or IPv6 without
 * extension headers; here a reset with sequence number 0 is the kernel's answer to a SYN nothing listened
 * for (RFC 793: a reset to a segment without ACK takes SEQ 0), and a port-unreachable error (ICMP 3/3,
 * ICMPv6 1/4) its answer to a UDP datagram nothing listened for, carrying that datagram's headers. One socket per IP version, bound to its protocol on `lo`: packets
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

static char reported[MAX_REPORTED][310];

enum { REFUSED_TCP, REFUSED_UDP };
static int nreported;

int refused_open(int ipv6) {
  static struct sock_filter code[] = {
      BPF_STMT(BPF_LD | BPF_B | BPF_ABS, 0),
      BPF_STMT(BPF_ALU | BPF_RSH | BPF_K, 4),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 4, 0, 6), /* IPv4, else 9 */
      BPF_STMT(BPF_LD | BPF_B | BPF_ABS, 9),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, IPPROTO_ICMP, 12, 0), /* to the accept */
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, IPPROTO_TCP, 0, 10),
      BPF_STMT(BPF_LDX | BPF_B | BPF_MSH, 0),
      BPF_STMT(BPF_LD | BPF_B | BPF_IND, 13),
      BPF_STMT(BPF_JMP | BPF_JA, 5), /* to the flags' test */
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 6, 0, 6), /* IPv6 */
      BPF_STMT(BPF_LD | BPF_B | BPF_ABS, 6),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, IPPROTO_ICMPV6, 5, 0), /* to the accept */
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

/* ADDR (4 bytes, network order) as text into TEXT: an allowed name's synthetic address as the name the
 * proxy knows, any other as `a.b.c.d`. */
static void v4_text(const unsigned char *addr, char *text, size_t cap) {
  inet_ntop(AF_INET, addr, text, (socklen_t)cap);
  uint32_t a = (uint32_t)addr[0] << 24 | (uint32_t)addr[1] << 16 | (uint32_t)addr[2] << 8 | addr[3];
  const char *name = names_lookup(a);
  if (name != NULL && strlen(name) < cap) snprintf(text, cap, "%s", name);
}

static int is_own_v4(const unsigned char *addr) { return addr[0] == 127 && addr[1] == 0 && addr[2] == 0 && addr[3] == 1; }

/* `TEXT:PORT` (IPV6: `[TEXT]:PORT`) into OUT; 0, or -1 when it does not fit. */
static int with_port(char *out, size_t cap, const char *text, const unsigned char *port, int ipv6) {
  int n = snprintf(out, cap, ipv6 ? "[%s]:%u" : "%s:%u", text, (unsigned)port[0] << 8 | port[1]);
  return n > 0 && (size_t)n < cap ? 0 : -1;
}

/* The UDP datagram an ICMP port-unreachable error (its payload: the datagram's IP header and at least 8
 * bytes of it) answers for, from INNER (LEN bytes): its destination into OUT; -1 when it is not UDP, or
 * went to the sandbox's own loopback. */
static int udp_target(const unsigned char *inner, size_t len, int ipv6, char *out, size_t cap) {
  char text[INET6_ADDRSTRLEN];
  if (!ipv6) {
    size_t ihl = len >= 20 ? (size_t)(inner[0] & 15) * 4 : 0;
    if (ihl < 20 || len < ihl + 8 || inner[0] >> 4 != 4 || inner[9] != IPPROTO_UDP || is_own_v4(inner + 16)) return -1;
    v4_text(inner + 16, text, sizeof text);
    return with_port(out, cap, text, inner + ihl + 2, 0);
  }
  if (len < 48 || inner[0] >> 4 != 6 || inner[6] != IPPROTO_UDP || memcmp(inner + 24, &in6addr_loopback, 16) == 0)
    return -1;
  inet_ntop(AF_INET6, inner + 24, text, sizeof text);
  return with_port(out, cap, text, inner + 40 + 2, 1);
}

/* What PKT (LEN bytes) tells of a refusal, into OUT: the source of a reset that answers a SYN
 * (`a.b.c.d:port`, `[v6]:port`, or `name:port` for an allowed name's synthetic address), with *KIND
 * REFUSED_TCP; or the destination of a UDP datagram an ICMP port-unreachable error answers, with *KIND
 * REFUSED_UDP. -1 for anything else, and for what concerns the sandbox's own loopback. */
static int target_of(const unsigned char *pkt, size_t len, char *out, size_t cap, int *kind) {
  char text[INET6_ADDRSTRLEN];
  const unsigned char *next;
  int ipv6;
  if (len >= 20 && pkt[0] >> 4 == 4) {
    size_t ihl = (size_t)(pkt[0] & 15) * 4;
    if (ihl < 20 || len < ihl + 8) return -1;
    ipv6 = 0;
    next = pkt + ihl;
    if (pkt[9] == IPPROTO_ICMP) {
      if (next[0] != 3 || next[1] != 3) return -1; /* destination unreachable: port unreachable */
      *kind = REFUSED_UDP;
      return udp_target(next + 8, len - ihl - 8, 0, out, cap);
    }
    if (len < ihl + 20 || is_own_v4(pkt + 12)) return -1;
    v4_text(pkt + 12, text, sizeof text);
  } else if (len >= 48 && pkt[0] >> 4 == 6) {
    ipv6 = 1;
    next = pkt + 40;
    if (pkt[6] == IPPROTO_ICMPV6) {
      if (next[0] != 1 || next[1] != 4) return -1; /* destination unreachable: port unreachable */
      *kind = REFUSED_UDP;
      return udp_target(next + 8, len - 48, 1, out, cap);
    }
    if (len < 60 || memcmp(pkt + 8, &in6addr_loopback, 16) == 0) return -1;
    inet_ntop(AF_INET6, pkt + 8, text, sizeof text);
  } else {
    return -1;
  }
  if (next[4] | next[5] | next[6] | next[7]) return -1; /* SEQ not 0: a reset of an open connection */
  *kind = REFUSED_TCP;
  return with_port(out, cap, text, next, ipv6);
}

static void report(const struct bridge_ctx *b, int kind, const char *target) {
  const char *what = kind == REFUSED_UDP ? "udp-refused" : "port-refused";
  char key[310];
  snprintf(key, sizeof key, "%s %s", what, target);
  for (int i = 0; i < nreported; i++)
    if (strcmp(reported[i], key) == 0) return;
  if (nreported >= MAX_REPORTED) return; /* the run's record holds enough of them */
  snprintf(reported[nreported++], sizeof reported[0], "%s", key);
  int fd = dial_proxy(b->proxy_path);
  if (fd < 0) return;
  char line[340];
  int n = snprintf(line, sizeof line, "ALEPH %s\r\n", key);
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
    int kind = REFUSED_TCP;
    if (from.sll_pkttype == PACKET_OUTGOING || target_of(pkt, (size_t)got, target, sizeof target, &kind) < 0) continue;
    if (b->proxy_path != NULL) report(b, kind, target);
  }
}
