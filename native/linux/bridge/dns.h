/*
 * DNS messages as the bridge's resolver reads and writes them (RFC 1035, RFC 6891 EDNS, RFC 8914
 * extended errors): one question in, one answer out. Pure functions over buffers, nothing else.
 */
#ifndef ALEPH_BRIDGE_DNS_H
#define ALEPH_BRIDGE_DNS_H

#include <stddef.h>
#include <stdint.h>

#define DNS_MAX_MESSAGE 4096
#define DNS_TYPE_A 1
#define DNS_TYPE_PTR 12
#define DNS_TYPE_AAAA 28
#define DNS_TYPE_ANY 255
#define DNS_RCODE_FORMERR 1
#define DNS_RCODE_NXDOMAIN 3
#define DNS_RCODE_NOTIMP 4
#define DNS_RCODE_REFUSED 5

struct dns_question {
  char name[256];   /* lower-case, dotted, without the root's dot; "" for the root */
  int clean;        /* every label is letters, digits, '-' or '_' */
  uint16_t qtype, qclass;
  size_t end;       /* where the question ends in the query */
  int edns;         /* the query carried an OPT record: the answer may carry an extended error */
};

/* What to answer: RCODE, and at most one record (TYPE A with ADDR, or TYPE PTR with TARGET). */
struct dns_reply {
  int rcode;
  uint16_t type;      /* 0: no record */
  uint32_t addr;      /* A: host byte order */
  const char *target; /* PTR: a dotted name */
  const char *ede;    /* extended error text (info code 15, Blocked), or NULL */
};

/* Reads the query MSG of LEN bytes into Q: 0, or an rcode to answer with (FORMERR, NOTIMP), or -1 when the
 * message is too broken to be answered at all (shorter than a header, or a response). */
int dns_parse(const unsigned char *msg, size_t len, struct dns_question *q);
/* Writes the answer to QUERY (its question Q) into OUT (CAP bytes); its length, or 0 when it does not
 * fit. */
size_t dns_answer(const unsigned char *query, const struct dns_question *q, const struct dns_reply *r,
                  unsigned char *out, size_t cap);

#endif
