/*
 * Landlock inside the sandbox: the filesystem, TCP and scoping rules the helper enforces on itself before
 * it execs the program, and what `--probe` asks of the kernel about Landlock.
 */
#ifndef ALEPH_HELPER_LANDLOCK_H
#define ALEPH_HELPER_LANDLOCK_H

#include <stddef.h>

#define LANDLOCK_MAX_PATHS 1024

struct path_rule {
  /* An absolute path, or the number of a descriptor the launcher opened (a user path: the rule is made on
   * that descriptor, never by resolving the path again). */
  const char *path;
  char kind; /* 'r' read+exec, 'w' read+write+exec, 'd' device directory, 'l' list directories only */
};

/* The rules of --landlock, --ll-ro/-rw/-dev/-list, --ll-net, --ll-connect and --ll-scope. */
struct landlock_rules {
  const char *mode; /* off | best-effort | required */
  struct path_rule paths[LANDLOCK_MAX_PATHS];
  int npaths;
  int net_handled;
  long connect_ports[16];
  int nconnect;
  int scope;
};

/* The ABI version the kernel reports, 0 without Landlock. */
int landlock_abi(void);
/* Enforces R on this process; the ABI applied, 0 when Landlock is unavailable in best-effort mode (in
 * required mode that dies). */
int apply_landlock(const struct landlock_rules *r);
/* In a child of its own: enforces a ruleset that refuses directory reads and checks / cannot be listed.
 * "ok", or what failed (in BUF). */
const char *landlock_exercise(char *buf, size_t len);

#endif
