/* The launcher's change recording options and hooks (changes.h). */
#define _GNU_SOURCE
#include "changes.h"

#include <stdio.h>
#include <string.h>

#include "../changes/store.h"
#include "../changes/supervise.h"
#include "../common/errors.h"
#include "nodes.h"

static char fd_arg[16];

/* --changes-root PATH: the --open node of that path, by its host descriptor. */
static void changes_root(const char *path) {
  for (int k = 0; k < nnodes; k++)
    if (nodes[k].path != NULL && nodes[k].parent < 0 && strcmp(nodes[k].path, path) == 0 && nodes[k].fd >= 0) {
      store_add_root(node_host_fd(k), path);
      return;
    }
  die("launch: --changes-root %s: not a present path opened with --open", path);
}

int changes_option(int argc, char **argv, int *i) {
  int left = argc - *i - 1;
  if (strcmp(argv[*i], "--changes") == 0 && left >= 3) {
    store_open(argv[*i + 1], parse_long(argv[*i + 2], "--changes bytes"), parse_long(argv[*i + 3], "--changes file bytes"));
    *i += 3;
    return 1;
  }
  if (strcmp(argv[*i], "--changes-root") == 0 && left >= 1) {
    if (!store_active()) die("launch: --changes-root before --changes");
    changes_root(argv[++*i]);
    return 1;
  }
  return 0;
}

const char *changes_fd_arg(void) {
  if (fd_arg[0] == '\0') die("launch: @CHANGES used without --changes");
  return fd_arg;
}

void changes_before(void) {
  if (store_active()) snprintf(fd_arg, sizeof fd_arg, "%d", supervise_prepare());
}

void changes_started(void) {
  if (store_active()) supervise_start();
}

void changes_after(void) {
  if (store_active()) supervise_finish();
}
