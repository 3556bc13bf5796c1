/*
 * The host side of a run: `aleph-sandbox-init --launch OPTIONS -- PROGRAM ARGS…` (PROGRAM is bwrap).
 *
 * The driver starts it with a fixed environment. It:
 *   1. opens every user path it is given (--open, --open-in) as an O_PATH descriptor without following
 *      symlinks (openat2 RESOLVE_NO_SYMLINKS, and RESOLVE_BENEATH below a parent), so what is mounted
 *      later is exactly what was opened here, whatever a sandboxed command swaps meanwhile: nodes.c;
 *   2. decides protection from what it opened: a protected path that is there is mounted read-only; one
 *      that is not gets no mount and nothing in its place, and is checked after the run: nodes.c, args.c;
 *   3. picks the run's own uid from --uid-range (one lock file per uid under --state, held for the run),
 *      or takes the fixed --uid: uid.c;
 *   4. on a root host (--clone), replaces each descriptor with a detached mount of it (open_tree), made
 *      read-only where asked and idmapped so the directory's owner appears as the run's uid: clone.c,
 *      idmap.c;
 *   5. replaces the arguments @NAME (a descriptor's number), @UID and @GID in PROGRAM's arguments: args.c,
 *      and @STATUS by the helper's set-up status channel, whose first line the report gives as
 *      `setup started|failed: WHY|none` after PROGRAM: setup-status.c;
 *   5b. without --clone (tier 2: no CAP_SYS_ADMIN in the host's user namespace), PROGRAM's child mounts,
 *      in a mount namespace of its own, a clone of each node's descriptor on STATE/stage/K (the same inode
 *      opened again there, or the run is refused), and bwrap binds those instead of `--bind-fd`, which
 *      would mount the descriptor's path: stage.c;
 *   6. runs PROGRAM with a fixed environment, waits for it, cleans up and exits as PROGRAM did. SIGTERM,
 *      SIGINT, SIGHUP and the death of its own parent kill PROGRAM first, so the cleanup still runs:
 *      program.c.
 * Steps 1 to 4 happen as the options are read, in their order (options.c).
 * --net-pool KEY: where the fork server put this process in a network namespace of its pool
 * (spawner/netpool.c), PROGRAM's first `--unshare-net` is dropped, so PROGRAM runs in that one instead of
 * making its own.
 * --outer-ns: PROGRAM starts in user and network namespaces the launcher makes (program.c), where bwrap
 * cannot make them itself (gVisor).
 * --publish PORT: while PROGRAM runs, host connections to 127.0.0.1:PORT are passed to the sandbox's bridge
 * (publish.c), which connects them to PORT inside; `@PUBLISH` in PROGRAM's arguments is its end.
 * Before the options are read, and from before PROGRAM starts until after its checks: the record of runs in
 * progress under --state (inflight.c), by which a run killed whole before its check is checked for by the
 * next run.
 * --watch-pids N SLACK: while PROGRAM runs, a thread counts its tasks (watch.c) and the report says
 * `limit processes SEEN N` when it saw SEEN >= N - SLACK at once: the process limit was reached or nearly,
 * read from the host's procfs, not from PROGRAM.
 * --changes DIR …: the run's changes recorded while it runs (changes.c, ../changes/).
 * After PROGRAM: --reap kills what it left behind (tier 3, after-run/reap.c); the check of every
 * --check-root (after-run/check.c) sets aside what a command left for host tools to run (git control
 * files, absent protected paths that appeared), clears set-id bits and reports symlinks leading out, into
 * --quarantine; and --guard ROOT REL (tier 3, no read-only mounts) puts back the protected paths it
 * changed, from a snapshot taken before it (after-run/guard.c).
 */
#define _GNU_SOURCE
#include "launch.h"

#include <signal.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "../after-run/check.h"
#include "../after-run/reap.h"
#include "../common/report.h"
#include "args.h"
#include "changes.h"
#include "idmap.h"
#include "inflight.h"
#include "nodes.h"
#include "options.h"
#include "program.h"
#include "publish.h"
#include "roots.h"
#include "setup-status.h"
#include "stage.h"
#include "state.h"
#include "watch.h"

int launch_joined_net;

int launch_main(int argc, char **argv) {
  sigset_t old_mask;
  hold_stop_signals(&old_mask);
  const char *report_path = launch_option(argc, argv, "--report");
  FILE *report = report_path == NULL ? NULL : report_open(report_path);
  read_early_options(argc, argv);
  /* Runs killed whole before their check after the run are checked for first (inflight.c). */
  inflight_sweep(argc, argv, report);
  struct launch_options o;
  char **prog = &argv[read_launch_options(argc, argv, &o)];
  prepare_guards(report);
  unlock_roots_mutex();
  if (o.net_pool && launch_joined_net) drop_unshare_net(prog);
  publish_pass_on(prog);
  setup_status_open(prog);
  changes_before(); /* the socket `@CHANGES` names */
  substitute_args(prog, o.uid);
  /* The descriptors PROGRAM passes on to the helper inside; every other one of ours is close-on-exec. */
  pass_nodes_on();
  if (o.cgroup != NULL) enter_run_cgroup(o.cgroup);
  check_prepare(state_fd);
  inflight_begin();

  struct timespec start;
  int stage = !o.outer_ns && stage_planned();
  pid_t c = start_program(prog, &old_mask, &start, o.outer_ns, stage);
  close_nodes();
  setup_status_started();
  watch_start(o.reap ? getpid() : c, o.watch_pids);
  changes_started();
  /* Published ports have a wait loop of their own, which drains the change journal too. */
  int status = publish_active() ? publish_serve(c, check_poll_fd(), check_poll_ready) : check_wait(c);
  long seen = watch_stop();
  if (o.watch_pids > 0 && seen >= o.watch_pids - o.watch_slack) {
    char text[64];
    snprintf(text, sizeof text, "processes %ld %ld", seen, o.watch_pids);
    report_line(report, "limit", text, NULL);
  }
  setup_status_report(report);
  idmap_reap();
  if (o.reap) reap_descendants();
  changes_after(); /* what the command left, before the check sets anything aside */
  set_aside_moved(&start, report);
  check_after(&start, report);
  release_roots(report);
  inflight_end();
  if (report != NULL) fclose(report);
  return exit_as_program(status);
}
