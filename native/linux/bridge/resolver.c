/*
 * The resolver's decisions (resolver.h). Names are matched as received, lower-cased; what cannot be a host
 * name (a label with other bytes than letters, digits, '-' and '_'), a single label (the sandbox's own
 * host name, search-list guesses) and reverse lookups other than of a synthetic address get NXDOMAIN
 * without a report: they are not a host the command asked to reach. `localhost` is the sandbox's own
 * loopback (RFC 6761). A refusal is reported to the proxy as one line, `ALEPH dns-refused NAME`, on a
 * connection of its own: the proxy checks the name against its own allowlist before it records anything,
 * so a report can only ever say what is true.
 */
#define _GNU_SOURCE
#include "resolver.h"

#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "dial.h"
#include "dns.h"

#define MAX_REPORTED 256
#define LOOPBACK 0x7f000001u

static char reported[MAX_REPORTED][256];
static int nreported;

static void report_refusal(const char *proxy_path, const char *name) {
  for (int i = 0; i < nreported; i++)
    if (strcmp(reported[i], name) == 0) return;
  if (nreported < MAX_REPORTED) snprintf(reported[nreported++], sizeof reported[0], "%s", name);
  int fd = dial_proxy(proxy_path);
  if (fd < 0) return;
  char line[300];
  int n = snprintf(line, sizeof line, "ALEPH dns-refused %s\r\n", name);
  if (n > 0 && (size_t)n < sizeof line) send(fd, line, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT);
  close(fd);
}

static int ends_with(const char *s, const char *suffix) {
  size_t ls = strlen(s), lx = strlen(suffix);
  return ls >= lx && strcmp(s + ls - lx, suffix) == 0;
}

/* A reverse lookup: the name behind a synthetic address, or NULL. */
static const char *reverse(const char *name) {
  unsigned d, c, b, a;
  char tail[32];
  if (sscanf(name, "%u.%u.%u.%u.%31s", &d, &c, &b, &a, tail) != 5 || strcmp(tail, "in-addr.arpa") != 0)
    return NULL;
  if (a > 255 || b > 255 || c > 255 || d > 255) return NULL;
  return names_lookup(a << 24 | b << 16 | c << 8 | d);
}

/* The reply for the name of Q; REPORT set when it is a refusal to report. */
static void decide(const struct name_rules *rules, const struct dns_question *q, struct dns_reply *r, int *report) {
  int a_wanted = q->qtype == DNS_TYPE_A || q->qtype == DNS_TYPE_ANY;
  *report = 0;
  if (ends_with(q->name, ".arpa")) {
    const char *target = reverse(q->name);
    if (target == NULL) r->rcode = DNS_RCODE_NXDOMAIN;
    else if (q->qtype == DNS_TYPE_PTR || q->qtype == DNS_TYPE_ANY) *r = (struct dns_reply){.type = DNS_TYPE_PTR, .target = target};
    return;
  }
  if (strcmp(q->name, "localhost") == 0 || ends_with(q->name, ".localhost")) {
    if (a_wanted) *r = (struct dns_reply){.type = DNS_TYPE_A, .addr = LOOPBACK};
    return;
  }
  if (!q->clean || strchr(q->name, '.') == NULL || !names_allowed(rules, q->name)) {
    r->rcode = DNS_RCODE_NXDOMAIN;
    r->ede = "aleph-sandbox: not on the allowlist (allowHosts) of this run";
    *report = q->clean && strchr(q->name, '.') != NULL;
    return;
  }
  if (!a_wanted) return; /* AAAA and the rest: NODATA; connections go through the IPv4 address */
  uint32_t addr = names_address(q->name);
  if (addr == 0) r->rcode = 2; /* SERVFAIL: the run resolved more names than the table holds */
  else *r = (struct dns_reply){.type = DNS_TYPE_A, .addr = addr};
}

size_t resolver_answer(const struct name_rules *rules, const char *proxy_path, const unsigned char *msg,
                       size_t len, unsigned char *out, size_t cap) {
  struct dns_question q;
  struct dns_reply r = {0};
  int rc = dns_parse(msg, len, &q);
  if (rc < 0) return 0;
  int report = 0;
  if (rc > 0) r.rcode = rc;
  else if (q.qclass != 1 && q.qclass != 255) r.rcode = DNS_RCODE_NOTIMP;
  else if (q.name[0] == '\0') r.rcode = DNS_RCODE_REFUSED;
  else decide(rules, &q, &r, &report);
  size_t n = dns_answer(msg, &q, &r, out, cap);
  /* Reported before the answer leaves: the run cannot end between the two. */
  if (report && proxy_path != NULL) report_refusal(proxy_path, q.name);
  return n;
}
