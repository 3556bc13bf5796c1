/*
 * DNS messages (dns.h). A query is read strictly: one question, its name without compression pointers,
 * labels of at most 63 bytes, at most 255 in all; the additional section is looked through only for an
 * OPT record. An answer repeats the question, carries the one record asked for, and an OPT record with
 * an extended error (RFC 8914, info code 15 "Blocked") when the query spoke EDNS.
 */
#define _GNU_SOURCE
#include "dns.h"

#include <ctype.h>
#include <string.h>

#define HEADER 12
#define TTL 300
#define EDE_CODE 15
#define OPT_PAYLOAD 1232

static uint16_t get16(const unsigned char *p) { return (uint16_t)(p[0] << 8 | p[1]); }

static void put16(unsigned char *p, uint16_t v) {
  p[0] = (unsigned char)(v >> 8);
  p[1] = (unsigned char)v;
}

static void put32(unsigned char *p, uint32_t v) {
  put16(p, (uint16_t)(v >> 16));
  put16(p + 2, (uint16_t)v);
}

/* The question's name at MSG+*OFF into Q->name; -1 when malformed. */
static int read_name(const unsigned char *msg, size_t len, size_t *off, struct dns_question *q) {
  size_t at = *off, out = 0;
  q->clean = 1;
  for (;;) {
    if (at >= len) return -1;
    unsigned n = msg[at++];
    if (n == 0) break;
    if (n > 63 || at + n > len || out + n + 1 >= sizeof q->name) return -1; /* pointers (0xc0) too */
    if (out > 0) q->name[out++] = '.';
    for (unsigned i = 0; i < n; i++) {
      unsigned char c = msg[at + i];
      if (!isalnum(c) && c != '-' && c != '_') q->clean = 0;
      q->name[out++] = (char)tolower(c);
    }
    at += n;
  }
  q->name[out] = '\0';
  *off = at;
  return 0;
}

/* Skips one resource record's name (labels or a pointer) and fixed part; its type in *TYPE. -1: broken. */
static int skip_record(const unsigned char *msg, size_t len, size_t *off, uint16_t *type) {
  size_t at = *off;
  for (;;) {
    if (at >= len) return -1;
    unsigned n = msg[at];
    if ((n & 0xc0) == 0xc0) {
      at += 2;
      break;
    }
    at += 1 + n;
    if (n == 0) break;
  }
  if (at + 10 > len) return -1;
  *type = get16(msg + at);
  size_t rdlen = get16(msg + at + 8);
  if (at + 10 + rdlen > len) return -1;
  *off = at + 10 + rdlen;
  return 0;
}

int dns_parse(const unsigned char *msg, size_t len, struct dns_question *q) {
  memset(q, 0, sizeof *q);
  if (len < HEADER || (msg[2] & 0x80)) return -1;
  unsigned opcode = (msg[2] >> 3) & 0x0f;
  if (get16(msg + 4) != 1) return DNS_RCODE_FORMERR;
  size_t off = HEADER;
  if (read_name(msg, len, &off, q) < 0 || off + 4 > len) return DNS_RCODE_FORMERR;
  q->qtype = get16(msg + off);
  q->qclass = get16(msg + off + 2);
  q->end = off + 4;
  unsigned records = (unsigned)get16(msg + 6) + get16(msg + 8) + get16(msg + 10);
  off = q->end;
  for (unsigned i = 0; i < records; i++) {
    uint16_t type;
    if (skip_record(msg, len, &off, &type) < 0) break;
    if (type == 41) q->edns = 1;
  }
  if (opcode != 0) return DNS_RCODE_NOTIMP;
  return 0;
}

/* NAME as labels at OUT (room for CAP bytes); the bytes written, 0 when it does not fit. */
static size_t put_name(unsigned char *out, size_t cap, const char *name) {
  size_t w = 0;
  const char *p = name;
  while (*p != '\0') {
    const char *dot = strchr(p, '.');
    size_t n = dot == NULL ? strlen(p) : (size_t)(dot - p);
    if (n == 0 || n > 63 || w + 1 + n + 1 > cap) return 0;
    out[w++] = (unsigned char)n;
    memcpy(out + w, p, n);
    w += n;
    p += n + (dot == NULL ? 0 : 1);
  }
  if (w + 1 > cap) return 0;
  out[w++] = 0;
  return w;
}

/* The answer's one record at OUT; its length, 0 when it does not fit. */
static size_t put_record(unsigned char *out, size_t cap, const struct dns_reply *r) {
  if (cap < 12) return 0;
  put16(out, 0xc00c); /* the question's name */
  put16(out + 2, r->type);
  put16(out + 4, 1);
  put32(out + 6, TTL);
  if (r->type == DNS_TYPE_A) {
    if (cap < 16) return 0;
    put16(out + 10, 4);
    put32(out + 12, r->addr);
    return 16;
  }
  size_t n = put_name(out + 12, cap - 12, r->target);
  if (n == 0) return 0;
  put16(out + 10, (uint16_t)n);
  return 12 + n;
}

/* The OPT record with the extended error TEXT at OUT; its length, 0 when it does not fit. */
static size_t put_opt(unsigned char *out, size_t cap, const char *text) {
  size_t tl = text == NULL ? 0 : strlen(text);
  if (tl > 300) tl = 300;
  size_t opt = text == NULL ? 0 : 4 + 2 + tl;
  if (cap < 11 + opt) return 0;
  out[0] = 0; /* the root */
  put16(out + 1, 41);
  put16(out + 3, OPT_PAYLOAD);
  put32(out + 5, 0);
  put16(out + 9, (uint16_t)opt);
  if (text != NULL) {
    put16(out + 11, 15); /* the option: extended DNS error */
    put16(out + 13, (uint16_t)(2 + tl));
    put16(out + 15, EDE_CODE);
    memcpy(out + 17, text, tl);
  }
  return 11 + opt;
}

size_t dns_answer(const unsigned char *query, const struct dns_question *q, const struct dns_reply *r,
                  unsigned char *out, size_t cap) {
  size_t qlen = q->end > HEADER ? q->end - HEADER : 0;
  if (cap < HEADER + qlen) return 0;
  memcpy(out, query, 2); /* the id */
  out[2] = (unsigned char)(0x80 | (query[2] & 0x78) | 0x04 | (query[2] & 0x01)); /* QR, opcode, AA, RD */
  out[3] = (unsigned char)(0x80 | (r->rcode & 0x0f));                            /* RA, rcode */
  put16(out + 4, qlen > 0 ? 1 : 0);
  put16(out + 6, 0);
  put16(out + 8, 0);
  put16(out + 10, 0);
  memcpy(out + HEADER, query + HEADER, qlen);
  size_t w = HEADER + qlen;
  if (r->type != 0 && qlen > 0) {
    size_t n = put_record(out + w, cap - w, r);
    if (n == 0) return 0;
    w += n;
    put16(out + 6, 1);
  }
  if (q->edns) {
    size_t n = put_opt(out + w, cap - w, r->ede);
    if (n == 0) return 0;
    w += n;
    put16(out + 10, 1);
  }
  return w;
}
