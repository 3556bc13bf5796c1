/*
 * The launcher's options (options.h):
 *   --state DIR                  the state directory (state.c)
 *   --uid-range LO HI | --uid U  the run's uid (uid.c)
 *   --net-pool KEY               the session's network namespace, lent by the fork server (netpool.c)
 *   --reap                       tier 3: kill what PROGRAM leaves behind (after-run/reap.c)
 *   --enter-cgroup DIR           run PROGRAM in the cgroup DIR (program.c)
 *   --open NAME PATH             open a user path (nodes.c)
 *   --open-in NAME PARENT REL way|ro   open a path below another: a directory on the way, or a protected
 *                                path, read-only when there and checked after the run when not (nodes.c)
 *   --check-root NAME            check the writable root NAME after the run (after-run/check.c)
 *   --journal                    keep a change journal for that check (a root host: fanotify)
 *   --quarantine DIR             where what the checks set aside goes (after-run/quarantine.c)
 *   --quarantine-budget RUN:SESSION  what its copies may cost, in bytes (read first: read_early_options)
 *   --guard NAME REL             tier 3: guard REL below NAME (roots.c, after-run/guard.c)
 *   --report FILE                what the checks after the run did (common/report.c)
 *   --clone NAME ro|rw           a root host's detached, idmapped mount of NAME (clone.c)
 *   --publish PORT               listen on the host's 127.0.0.1:PORT for the sandbox (publish.c)
 *   --changes DIR B F, --changes-root PATH   record the run's changes (changes.c)
 *   --outer-ns                   PROGRAM starts in user and network namespaces of its own, made here
 *                                (gVisor, where bwrap cannot make them itself: program.c)
 *   --watch-pids N SLACK         report `limit processes SEEN N` when PROGRAM's tasks came within SLACK
 *                                of N at once (watch.c)
 */
#define _GNU_SOURCE
#include "options.h"

#include <string.h>

#include "../after-run/check.h"
#include "../after-run/quarantine.h"
#include "../after-run/reap.h"
#include "../common/errors.h"
#include "changes.h"
#include "clone.h"
#include "nodes.h"
#include "publish.h"
#include "roots.h"
#include "state.h"
#include "uid.h"

/* --check-root NAME: the writable root NAME (opened with --open, not cloned yet) is checked after the run. */
static void check_root_option(const char *name) {
  int k = find_node(name);
  if (nodes[k].path == NULL) die("launch: --check-root %s: not a path opened with --open", name);
  check_root(node_host_fd(k), nodes[k].path);
}

/* --guard NAME REL: REL below the root NAME is guarded (its snapshot shared by every run using NAME). */
static void guard_option(const char *name, const char *rel) {
  int k = find_node(name);
  if (nodes[k].path == NULL) die("launch: --guard %s: not a path opened with --open", name);
  struct root_lock *l = lock_root(k, nodes[k].fd, &nodes[k].st);
  if (l == NULL) die("launch: --guard needs --state");
  guard_root(l, nodes[k].path, &nodes[k].st, rel);
}

void read_early_options(int argc, char **argv) {
  for (int i = 2; i + 1 < argc && strcmp(argv[i], "--") != 0; i++)
    if (strcmp(argv[i], "--quarantine-budget") == 0) quarantine_budget(argv[i + 1]);
}

int read_launch_options(int argc, char **argv, struct launch_options *o) {
  memset(o, 0, sizeof *o);
  o->uid = -1;
  int i = 2;
  for (; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--") == 0) {
      i++;
      break;
    }
    int left = argc - i - 1;
    if (strcmp(a, "--state") == 0 && left >= 1) {
      state_open(argv[++i]);
    } else if (strcmp(a, "--uid-range") == 0 && left >= 2) {
      o->uid = pick_uid(parse_long(argv[i + 1], "uid"), parse_long(argv[i + 2], "uid"));
      i += 2;
    } else if (strcmp(a, "--uid") == 0 && left >= 1) {
      o->uid = parse_long(argv[++i], "uid");
    } else if (strcmp(a, "--net-pool") == 0 && left >= 1) {
      o->net_pool = 1; /* its value, the session's key, is for the fork server (netpool.c) */
      i++;
    } else if (strcmp(a, "--reap") == 0) {
      o->reap = 1; /* tier 3: no PID namespace takes PROGRAM's leftovers down, so this process does */
      reap_prepare();
    } else if (strcmp(a, "--enter-cgroup") == 0 && left >= 1) {
      o->cgroup = argv[++i];
    } else if (strcmp(a, "--open") == 0 && left >= 2) {
      open_root(argv[i + 1], argv[i + 2]);
      i += 2;
    } else if (strcmp(a, "--open-in") == 0 && left >= 4) {
      open_below(argv[i + 1], argv[i + 2], argv[i + 3], argv[i + 4]);
      i += 4;
    } else if (strcmp(a, "--check-root") == 0 && left >= 1) {
      check_root_option(argv[++i]);
    } else if (strcmp(a, "--journal") == 0) {
      check_use_journal();
    } else if (strcmp(a, "--quarantine") == 0 && left >= 1) {
      quarantine_use(argv[++i]);
    } else if (strcmp(a, "--quarantine-budget") == 0 && left >= 1) {
      i++; /* read first (read_early_options) */
    } else if (strcmp(a, "--guard") == 0 && left >= 2) {
      guard_option(argv[i + 1], argv[i + 2]);
      i += 2;
    } else if (strcmp(a, "--report") == 0 && left >= 1) {
      o->report = argv[++i];
    } else if (strcmp(a, "--publish") == 0 && left >= 1) {
      publish_option(argv[++i]);
    } else if (changes_option(argc, argv, &i)) {
    } else if (strcmp(a, "--outer-ns") == 0) {
      o->outer_ns = 1;
    } else if (strcmp(a, "--watch-pids") == 0 && left >= 2) {
      o->watch_pids = parse_long(argv[++i], "--watch-pids");
      o->watch_slack = parse_long(argv[++i], "--watch-pids slack");
      if (o->watch_pids <= 0 || o->watch_slack < 0 || o->watch_slack >= o->watch_pids)
        die("launch: bad --watch-pids %s %s", argv[i - 1], argv[i]);
    } else if (strcmp(a, "--clone") == 0 && left >= 2) {
      clone_node(argv[i + 1], argv[i + 2], o->uid);
      i += 2;
    } else {
      die("launch: unknown or incomplete option %s", a);
    }
  }
  if (i >= argc) die("launch: no program given after --");
  return i;
}
