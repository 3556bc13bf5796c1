/*
 * The launcher's command line: `--launch OPTIONS -- PROGRAM ARGS…`. Its options act as they are read, in
 * their order: opening a path, taking a root's lock, picking the uid, cloning a mount.
 */
#ifndef ALEPH_LAUNCHER_OPTIONS_H
#define ALEPH_LAUNCHER_OPTIONS_H

/* What the options leave for later. */
struct launch_options {
  long uid;           /* --uid-range's pick or --uid; -1 for none */
  int reap;           /* --reap: kill what PROGRAM leaves behind (tier 3) */
  int net_pool;       /* --net-pool KEY: the fork server may have lent a network namespace */
  const char *cgroup; /* --enter-cgroup DIR */
  const char *report; /* --report FILE */
  int outer_ns;       /* --outer-ns: PROGRAM in user and network namespaces made by the launcher */
  long watch_pids;    /* --watch-pids N SLACK: report when PROGRAM's tasks come within SLACK of N (0: not asked) */
  long watch_slack;
};

/* The options that act before the others and before the check of interrupted earlier runs
 * (--quarantine-budget). */
void read_early_options(int argc, char **argv);
/* Reads and carries out the options of ARGV (from ARGV[2] on); the index of PROGRAM, after `--`. Dies on
 * an unknown or incomplete option, or when no PROGRAM follows. */
int read_launch_options(int argc, char **argv, struct launch_options *o);

#endif
