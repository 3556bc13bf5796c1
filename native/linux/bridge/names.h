/*
 * The names the bridge's resolver answers for: the allowlist's name patterns (`name`, `*.suffix`) and the
 * deny list's, matched as the managed proxy matches them, and the synthetic loopback address each allowed
 * name gets (127.77.0.0/16, one per name, stable for the run), looked up both ways.
 */
#ifndef ALEPH_BRIDGE_NAMES_H
#define ALEPH_BRIDGE_NAMES_H

#include <stdint.h>

#define NAMES_MAX_PATTERNS 1024
#define NAMES_MAX_MAPPED 4096
/* 127.77.0.0/16, host byte order. */
#define NAMES_NET 0x7f4d0000u
#define NAMES_MASK 0xffff0000u

struct name_rules {
  const char *allow[NAMES_MAX_PATTERNS];
  int nallow;
  const char *deny[NAMES_MAX_PATTERNS];
  int ndeny;
};

/* Adds PATTERN (lower-case, ASCII: the driver normalised it) to the allow (DENY 0) or deny list. */
void names_add(struct name_rules *r, const char *pattern, int deny);
/* Whether NAME (lower-case, no trailing dot) is allowed: some allow pattern matches and no deny one does. */
int names_allowed(const struct name_rules *r, const char *name);
/* The synthetic address of the allowed NAME (host byte order), given on first use; 0 when the table is
 * full. */
uint32_t names_address(const char *name);
/* The name behind the synthetic address ADDR (host byte order), or NULL. */
const char *names_lookup(uint32_t addr);

#endif
