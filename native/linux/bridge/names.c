/*
 * The resolver's names (names.h): pattern matching as the managed proxy does it (packages/proxy
 * allowlist.ts: `name` exactly, `*.suffix` any strict subdomain, never the apex; a deny pattern wins), and
 * the table of synthetic addresses, filled in the order names are first asked for.
 */
#define _GNU_SOURCE
#include "names.h"

#include <stdlib.h>
#include <string.h>

#include "../common/errors.h"

static char *mapped[NAMES_MAX_MAPPED];
static int nmapped;

void names_add(struct name_rules *r, const char *pattern, int deny) {
  int *n = deny ? &r->ndeny : &r->nallow;
  if (*n >= NAMES_MAX_PATTERNS) die("too many --dns-%s patterns (at most %d)", deny ? "deny" : "allow", NAMES_MAX_PATTERNS);
  (deny ? r->deny : r->allow)[(*n)++] = pattern;
}

static int matches(const char *pattern, const char *name) {
  if (strncmp(pattern, "*.", 2) != 0) return strcmp(pattern, name) == 0;
  const char *suffix = pattern + 1; /* ".suffix" */
  size_t ls = strlen(suffix), ln = strlen(name);
  return ln > ls && strcmp(name + ln - ls, suffix) == 0;
}

int names_allowed(const struct name_rules *r, const char *name) {
  for (int i = 0; i < r->ndeny; i++)
    if (matches(r->deny[i], name)) return 0;
  for (int i = 0; i < r->nallow; i++)
    if (matches(r->allow[i], name)) return 1;
  return 0;
}

uint32_t names_address(const char *name) {
  for (int i = 0; i < nmapped; i++)
    if (strcmp(mapped[i], name) == 0) return NAMES_NET + (uint32_t)i + 1;
  if (nmapped >= NAMES_MAX_MAPPED) return 0;
  char *copy = strdup(name);
  if (copy == NULL) return 0;
  mapped[nmapped++] = copy;
  return NAMES_NET + (uint32_t)nmapped;
}

const char *names_lookup(uint32_t addr) {
  if ((addr & NAMES_MASK) != NAMES_NET) return NULL;
  uint32_t k = addr - NAMES_NET;
  return k >= 1 && k <= (uint32_t)nmapped ? mapped[k - 1] : NULL;
}
