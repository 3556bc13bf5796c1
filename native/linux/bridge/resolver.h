/*
 * The resolver inside the sandbox: what to answer to a DNS query, by the allowlist's name patterns. An
 * allowed name gets its synthetic loopback address (A) and no IPv6 one (NODATA for AAAA); any other name
 * NXDOMAIN at once, with an extended error saying why, and a report to the managed proxy, which records
 * the denial for the run.
 */
#ifndef ALEPH_BRIDGE_RESOLVER_H
#define ALEPH_BRIDGE_RESOLVER_H

#include <stddef.h>

#include "names.h"

/* The answer to the query MSG (LEN bytes) in OUT (CAP bytes): its length, 0 for no answer. A refused name
 * is reported once to the proxy at PROXY_PATH (when not NULL). */
size_t resolver_answer(const struct name_rules *rules, const char *proxy_path, const unsigned char *msg,
                       size_t len, unsigned char *out, size_t cap);

#endif
