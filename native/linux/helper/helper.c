/*
 * The helper proper (helper.h): the last step before the sandboxed program runs.
 *
 * bwrap starts this inside the new namespaces. In order it:
 *   0. makes the user-path mounts it is given (--mnt, --tmpfs-at, --mask-at, --dev-at) and checks the
 *      ones bwrap made from descriptors (--verify): mounts.c;
 *   1. sets the limits of the sandbox's own namespaces it is given (tier 2: pid_max of its PID namespace,
 *      the per-user counts of its user namespace, through descriptors of the host's /proc/sys the launcher
 *      opened): ns-limits.c;
 *   1b. drops to an unprivileged identity when asked (--uid/--gid; the host runs as root), clearing the
 *      capability bounding set first, so the program keeps neither capabilities nor root's file identity;
 *      without --uid it keeps its uid and drops every capability (tier 2 kept CAP_SYS_RESOURCE and
 *      CAP_SETPCAP for step 1): identity.c;
 *   2. sets no_new_privs;
 *   3. applies a Landlock ruleset (--ll-ro/--ll-rw/--ll-dev paths, optional TCP connect ports, scoping),
 *      in best-effort or required mode: landlock.c;
 *   4. forks the network bridge (--bridge PORT:PATH): 127.0.0.1:PORT inside the namespace, relayed to the
 *      host proxy's Unix socket: bridge.c;
 *   5. applies resource limits (--rlimit): after the identity change, so RLIMIT_NPROC counts the new uid,
 *      and after the bridge fork, so the limit is the program's alone: rlimits.c;
 *   6. closes every file descriptor above 2;
 *   7. loads the seccomp-BPF program read from --seccomp-fd: seccomp.c;
 *   8. execs the program with the environment read from --env-fd (NUL-separated NAME=VALUE entries):
 *      the command's environment never passes through bwrap or this helper's own environment (env.c).
 * `--direct` does the same steps on the host itself, without namespaces: see direct.c.
 */
#define _GNU_SOURCE
#include "helper.h"

#include <errno.h>
#include <linux/filter.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../common/compat.h"
#include "../common/errors.h"
#include "bridge.h"
#include "direct.h"
#include "env.h"
#include "identity.h"
#include "landlock.h"
#include "mounts.h"
#include "ns-limits.h"
#include "options.h"
#include "rlimits.h"
#include "seccomp.h"

static void close_extra_fds(int keep) {
  if (keep >= 3) {
    if (keep > 3 && syscall(SYS_close_range, 3, keep - 1, 0) < 0 && errno != ENOSYS) die("close_range: %s", strerror(errno));
    if (syscall(SYS_close_range, keep + 1, ~0U, 0) < 0 && errno != ENOSYS) die("close_range: %s", strerror(errno));
  } else if (syscall(SYS_close_range, 3, ~0U, 0) < 0 && errno != ENOSYS) {
    die("close_range: %s", strerror(errno));
  }
}

int helper_main(int argc, char **argv) {
  int direct = argc >= 2 && strcmp(argv[1], "--direct") == 0;
  if (direct) {
    argv[1] = argv[0];
    argv++;
    argc--;
  }
  struct options o;
  parse_args(argc, argv, &o);

  if (direct) direct_enter(&o);
  mount_ops_apply();
  char **env = o.env_fd >= 0 ? read_env(o.env_fd) : NULL;
  ns_limits_apply(&o.ns_limits);
  if (o.uid < 0) drop_capabilities();
  else drop_identity(o.uid, o.gid);
  if (o.chdir != NULL && chdir(o.chdir) < 0) die("cannot change to the directory %s: %s", o.chdir, strerror(errno));
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) die("PR_SET_NO_NEW_PRIVS: %s", strerror(errno));

  /* The bridge's listening socket exists before Landlock, so no bind right is needed afterwards. */
  int lfd = o.bridge_path != NULL ? bridge_listen(o.bridge_port) : -1;
  apply_landlock(&o.landlock);
  if (lfd >= 0) start_bridge(o.bridge_path, lfd);
  apply_rlimits(&o.rlimits);

  struct sock_fprog prog = {0};
  if (o.seccomp_fd >= 0) {
    prog = read_seccomp(o.seccomp_fd);
    close(o.seccomp_fd);
  }
  close_extra_fds(-1);
  load_seccomp(&prog);
  if (env != NULL) environ = env;
  execvp(o.argv[0], o.argv);
  int e = errno;
  fprintf(stderr, "aleph-sandbox-init: cannot execute %s: %s\n", o.argv[0], strerror(e));
  return e == ENOENT ? 127 : 126;
}
