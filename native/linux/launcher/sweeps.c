/*
 * The roots the launcher sweeps after the run (sweeps.h): each a descriptor of the directory itself (its
 * detached mount would not do) and the identity of its own .git at the start, which the run could not
 * change (its control files were read-only mounts).
 */
#define _GNU_SOURCE
#include "sweeps.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>

#include "../after-run/sweep.h"
#include "../common/errors.h"
#include "nodes.h"
#include "roots.h"
#include "stubs.h"

static struct sweep_root sweeps[MAX_NODES];
static int nsweeps;

void sweep_root(const char *name) {
  /* Before any --clone: the walk needs the directory itself, not its detached mount. */
  struct node *n = &nodes[find_node(name)];
  struct sweep_root *r = &sweeps[nsweeps++];
  r->fd = fcntl(n->fd, F_DUPFD_CLOEXEC, 0);
  if (r->fd < 0) die("launch: dup: %s", strerror(errno));
  if (n->path == NULL) die("launch: --git-sweep %s: not a path opened with --open", name);
  r->name = n->path;
  struct stat st;
  if (fstatat(n->fd, ".git", &st, AT_SYMLINK_NOFOLLOW) == 0) {
    r->top_dev = st.st_dev;
    r->top_ino = st.st_ino;
  }
}

void sweep_roots(const struct timespec *start, FILE *report) {
  if (nsweeps == 0) return;
  /* Stubs of every run using these roots are mount points elsewhere: the sweep leaves them alone. */
  static struct sweep_skip skip[MAX_RECORDED];
  int nskip = recorded_stubs(skip, MAX_RECORDED);
  for (int k = 0; k < nsweeps; k++) {
    sweeps[k].skip = skip;
    sweeps[k].nskip = nskip;
  }
  git_sweep(sweeps, nsweeps, start, report);
}
