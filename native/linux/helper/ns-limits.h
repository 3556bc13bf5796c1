/*
 * Limits of the sandbox's own namespaces (tier 2), which hold whatever uid the command has:
 *   --sysctl-kernel FD --pid-max N      pid_max of the sandbox's PID namespace (Linux 6.14+): at most N-1
 *                                       tasks, threads included, and once PID 300 was handed out new ones
 *                                       only from 300 to N-1 (the driver gives 300 + max_pids + 1), so a
 *                                       command keeping kernel uid 0 (root host, no CAP_SYS_ADMIN), which
 *                                       RLIMIT_NPROC does not bind, is bound at a time, not over its life;
 *   --sysctl-user FD --userns-limit NAME=N   /proc/sys/user/NAME (max_inotify_instances, …) of the sandbox's
 *                                       user namespace, below the user's, so one command cannot use up the
 *                                       counts the user's own editor and watchers share with it.
 * FD is a descriptor of the host's /proc/sys/kernel or /proc/sys/user that the launcher opened (bwrap's
 * /proc/sys is read-only): a sysctl is looked up in the namespace of whoever opens it, so opening NAME
 * below FD from inside reaches the sandbox's own, never the host's.
 */
#ifndef ALEPH_HELPER_NS_LIMITS_H
#define ALEPH_HELPER_NS_LIMITS_H

#define MAX_USERNS_LIMITS 16

struct ns_limits {
  int kernel_dir, user_dir; /* -1 when not given */
  long pid_max;             /* 0: not asked */
  int n;
  struct {
    char name[32];
    long value;
  } user[MAX_USERNS_LIMITS];
};

/* An empty set (no descriptors, nothing asked). */
void ns_limits_init(struct ns_limits *l);
/* Reads one option (A with value V) into L: 1 when it was one of ours. */
int ns_limits_option(struct ns_limits *l, const char *a, const char *v);
/* Writes every limit asked for and checks it reads back, then closes the descriptors; dies on any failure
 * (the plan promised the limit). pid_max needs Linux 6.14 and a PID namespace other than the host's: on an
 * older kernel pid_max is the host's one value, which this must never write. */
void ns_limits_apply(struct ns_limits *l);
/* 1 when the running kernel's release is at least MAJOR.MINOR. */
int kernel_at_least(int major, int minor);

#endif
