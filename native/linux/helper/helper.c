/*
 * The helper proper (helper.h): the last step before the sandboxed program runs.
 *
 * bwrap starts this inside the new namespaces. In order it:
 *   0. makes the user-path mounts it is given (--mnt, --tmpfs-at, --mask-at, --dev-at) and checks the
 *      ones bwrap made from descriptors (--verify): mounts.c;
 *   1. makes the network bridge's listening sockets (the proxy port, the resolver on 127.0.0.53:53, the
 *      transparent ports 80, 443, …), its routes and its packet socket: while it may still bind ports
 *      below 1024, set routes and open a packet socket (bwrap keeps CAP_NET_BIND_SERVICE, CAP_NET_ADMIN
 *      and CAP_NET_RAW for this), ../bridge/bridge.c; in tier 2 in a network namespace of its own
 *      (--own-netns, netns.c), as bwrap's belongs to a user namespace where the sandbox holds nothing;
 *   1b. sets the limits of the sandbox's own namespaces it is given (tier 2: pid_max of its PID namespace,
 *      the per-user counts of its user namespace, no new namespaces, through descriptors of the host's
 *      /proc/sys the launcher opened): ns-limits.c; after the bridge's namespace is made;
 *   2. drops to an unprivileged identity when asked (--uid/--gid; the host runs as root), clearing the
 *      capability bounding set first, so the program keeps neither capabilities nor root's file identity;
 *      without --uid it keeps its uid and drops every capability (tier 2 kept CAP_SYS_RESOURCE,
 *      CAP_SETPCAP and the bridge's for steps 1 and 1b): identity.c;
 *   3. sets no_new_privs;
 *   4. applies a Landlock ruleset (--ll-ro/--ll-rw/--ll-dev paths, optional TCP connect ports, scoping),
 *      in best-effort or required mode: landlock.c;
 *   5. forks the network bridge, which relays to the host proxy's Unix socket, answers DNS and takes in
 *      published ports' host connections: ../bridge/bridge.c;
 *   6. applies resource limits (--rlimit): after the identity change, so RLIMIT_NPROC counts the new uid,
 *      and after the bridge fork, so the limit is the program's alone: rlimits.c;
 *   7. closes every file descriptor above 2;
 *   8. with --changes-fd, installs the change recording's trapping filter and hands its listener to the
 *      launcher (../changes/notify.c; with --changes-spawn deny it also traps process creation, which the
 *      main filter then lets through: failing to install it is a set-up failure); loads the seccomp-BPF program read from --seccomp-fd: seccomp.c;
 *   9. says `started` on its status channel (--status-fd: a pipe whose reading end the launcher keeps;
 *      close-on-exec, so the program never holds it), then execs the program with the environment read
 *      from --env-fd (NUL-separated NAME=VALUE entries): the command's environment never passes through
 *      bwrap or this helper's own environment (env.c). A set-up failure before it (die()) says
 *      `failed MESSAGE` on that channel: the host believes the channel, never the program's stderr.
 * `--direct` does the same steps on the host itself, without namespaces: see direct.c.
 */
#define _GNU_SOURCE
#include "helper.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../common/closefrom.h"
#include "../common/compat.h"
#include "../common/errors.h"
#include "../bridge/bridge.h"
#include "../changes/notify.h"
#include "direct.h"
#include "env.h"
#include "identity.h"
#include "landlock.h"
#include "mounts.h"
#include "netns.h"
#include "ns-limits.h"
#include "options.h"
#include "rlimits.h"
#include "seccomp.h"

/* Closes every descriptor above 2 but `a` and `b` (either may be -1). */
static void close_extra_fds(int a, int b) {
  int lo = a < b ? a : b, hi = a < b ? b : a;
  unsigned from = 3;
  int keep[2] = {lo, hi};
  for (int k = 0; k < 2; k++) {
    if (keep[k] < 3 || (unsigned)keep[k] < from) continue;
    if ((unsigned)keep[k] > from && close_fds(from, (unsigned)keep[k] - 1) < 0)
      die("closing descriptors: %s", strerror(errno));
    from = (unsigned)keep[k] + 1;
  }
  if (close_fds(from, ~0U) < 0) die("closing descriptors: %s", strerror(errno));
}

/* --status-fd N among the helper's options (before `--`): die() reports to it from the start. */
static int open_status_channel(int argc, char **argv) {
  for (int i = 1; i + 1 < argc && strcmp(argv[i], "--") != 0; i++) {
    if (strcmp(argv[i], "--status-fd") != 0) continue;
    int fd = (int)parse_long(argv[i + 1], "fd");
    if (fcntl(fd, F_SETFD, FD_CLOEXEC) < 0) die("--status-fd %d: %s", fd, strerror(errno));
    status_channel(fd);
    return fd;
  }
  return -1;
}

int helper_main(int argc, char **argv) {
  int direct = argc >= 2 && strcmp(argv[1], "--direct") == 0;
  if (direct) {
    argv[1] = argv[0];
    argv++;
    argc--;
  }
  int status_fd = open_status_channel(argc, argv);
  struct options o;
  parse_args(argc, argv, &o);

  if (direct) direct_enter(&o);
  mount_ops_apply();
  char **env = o.env_fd >= 0 ? read_env(o.env_fd) : NULL;
  /* The bridge's namespace first: the limits may allow no new namespace from then on. */
  int bridge = !direct && bridge_wanted(&o.bridge);
  if (bridge && o.bridge.own_netns) enter_own_netns();
  if (bridge) bridge_open(&o.bridge);
  ns_limits_apply(&o.ns_limits);
  if (o.uid < 0) drop_capabilities();
  else drop_identity(o.uid, o.gid);
  if (o.chdir != NULL && chdir(o.chdir) < 0) die("cannot change to the directory %s: %s", o.chdir, strerror(errno));
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) die("PR_SET_NO_NEW_PRIVS: %s", strerror(errno));

  /* The bridge's sockets exist before Landlock, so no bind right is needed afterwards. */
  apply_landlock(&o.landlock);
  if (bridge) start_bridge(&o.bridge);
  apply_rlimits(&o.rlimits);

  struct sock_fprog prog = {0};
  if (o.seccomp_fd >= 0) {
    prog = read_seccomp(o.seccomp_fd);
    close(o.seccomp_fd);
  }
  close_extra_fds(status_fd, o.changes_fd);
  /* The trapping filter first: the main one may refuse seccomp() itself. */
  if (o.changes_fd >= 0) changes_hand_over(o.changes_fd, o.changes_deny_spawn);
  load_seccomp(&prog);
  if (env != NULL) environ = env;
  status_started();
  execvp(o.argv[0], o.argv);
  int e = errno;
  fprintf(stderr, "aleph-sandbox-init: cannot execute %s: %s\n", o.argv[0], strerror(e));
  return e == ENOENT ? 127 : 126;
}
