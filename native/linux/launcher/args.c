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
#include "changes.h"
#include "nodes.h"
#include "stage.h"

void drop_unshare_net(char **prog) {
  char **p = prog;
  while (*p != NULL && strcmp(*p, "--unshare-net") != 0) p++;
  if (*p == NULL) die("launch: --net-pool, but PROGRAM makes no network namespace of its own");
  for (; *p != NULL; p++) p[0] = p[1];
}

/* How many values the mount option OPT takes after its descriptor (which is its first value). */
static int mount_values(const char *opt) {
  if (strcmp(opt, "--bind-fd") == 0 || strcmp(opt, "--ro-bind-fd") == 0 || strcmp(opt, "--verify") == 0) return 2;
  if (strcmp(opt, "--mnt") == 0) return 3;
  return 0;
}

/* The node an argument @NAME or @NAME:v names (*SECOND: the :v form). */
static int node_of(const char *arg, int *second) {
  char name[256];
  snprintf(name, sizeof name, "%s", arg + 1);
  char *colon = strchr(name, ':');
  *second = colon != NULL;
  if (colon != NULL) *colon = '\0';
  return find_node(name);
}

void substitute_args(char **prog, long uid) {
  static char numbers[MAX_NODES][16];
  static char uidbuf[24];
  snprintf(uidbuf, sizeof uidbuf, "%ld", uid);
  for (int i = 0; prog[i] != NULL; i++) {
    char *a = prog[i];
    if (a[0] != '@') continue;
    if (strcmp(a, "@CHANGES") == 0) {
      prog[i] = (char *)changes_fd_arg();
      continue;
    }
    if (strcmp(a, "@UID") == 0 || strcmp(a, "@GID") == 0) {
      if (uid < 0) die("launch: %s used without --uid-range", a);
      prog[i] = uidbuf;
      continue;
    }
    int second, k = node_of(a, &second);
    if (nodes[k].absent) {
      /* Its mount goes: the option before it, it, and the option's other values. */
      int n = i > 0 ? mount_values(prog[i - 1]) : 0;
      if (n == 0) die("launch: %s names an absent path outside a mount option", a);
      int j = i - 1;
      while ((prog[j] = prog[j + n + 1]) != NULL) j++;
      i -= 2; /* the argument after the dropped option is now at i - 1 */
      continue;
    }
    if (!second && nodes[k].read_only && i > 0 && strcmp(prog[i - 1], "--bind-fd") == 0) prog[i - 1] = "--ro-bind-fd";
    /* @NAME:v: a second descriptor of NAME, for the helper to check what bwrap mounted from the first
     * (bwrap closes the descriptors it binds). */
    if (second) {
      int fd = fcntl(nodes[k].fd, F_DUPFD, 3);
      if (fd < 0) die("launch: dup: %s", strerror(errno));
      snprintf(a, strlen(a) + 1, "%d", fd); /* "@NAME:v" has room for its number */
      continue;
    }
    snprintf(numbers[k], sizeof numbers[k], "%d", nodes[k].fd);
    prog[i] = numbers[k];
    stage_note(prog, i, k);
  }
}
