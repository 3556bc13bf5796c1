/*
 * PROGRAM's arguments (args.h). The replacements live as long as this process: PROG points into them
 * until the exec.
 */
#define _GNU_SOURCE
#include "args.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>

#include "../common/errors.h"
#include "nodes.h"

void drop_unshare_net(char **prog) {
  char **p = prog;
  while (*p != NULL && strcmp(*p, "--unshare-net") != 0) p++;
  if (*p == NULL) die("launch: --net-pool, but PROGRAM makes no network namespace of its own");
  for (; *p != NULL; p++) p[0] = p[1];
}

void substitute_args(char **prog, long uid) {
  static char numbers[MAX_NODES][16];
  static char uidbuf[24];
  snprintf(uidbuf, sizeof uidbuf, "%ld", uid);
  for (char **p = prog; *p != NULL; p++) {
    if ((*p)[0] != '@') continue;
    if (strcmp(*p, "@UID") == 0 || strcmp(*p, "@GID") == 0) {
      if (uid < 0) die("launch: %s used without --uid-range", *p);
      *p = uidbuf;
      continue;
    }
    char *colon = strchr(*p, ':');
    if (colon != NULL) {
      /* @NAME:v: a second descriptor of NAME, for the helper to check what bwrap mounted from the first
       * (bwrap closes the descriptors it binds). */
      *colon = '\0';
      int k = find_node(*p + 1);
      int d = fcntl(nodes[k].fd, F_DUPFD, 3);
      if (d < 0) die("launch: dup: %s", strerror(errno));
      snprintf(*p, strlen(*p) + 3, "%d", d);
      continue;
    }
    int k = find_node(*p + 1);
    snprintf(numbers[k], sizeof numbers[k], "%d", nodes[k].fd);
    *p = numbers[k];
  }
}
