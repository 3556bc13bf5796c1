/*
 * Tier 3, no namespaces: `aleph-sandbox-init --direct OPTIONS -- PROGRAM ARGS…`.
 *
 * The launcher (`--launch … --reap -- aleph-sandbox-init --direct …`) execs this on the host itself, where
 * bwrap could not create namespaces. It takes the same options as the in-sandbox mode except the mount
 * operations (there is no mount namespace to make them in), and differs in three steps:
 *   - it starts a new session (what bwrap's --new-session does);
 *   - without --uid it keeps the host's uid and drops every capability instead: securebits that make uid 0
 *     ordinary on execve (where CAP_SETPCAP allows), the bounding, ambient, inheritable, permitted and
 *     effective sets, and then checks that none is left. With no_new_privs, an execve as uid 0 cannot
 *     regain any. So on a root host the program keeps root's file identity (it edits a root-owned
 *     repository) with no privilege, and Landlock is what confines the filesystem;
 *   - Landlock is required: without it nothing would confine the filesystem.
 *
 * The launcher's `--reap` makes it a child subreaper, so whatever the program leaves behind (a daemon that
 * double-forked, a process in a session of its own) is reparented to the launcher, which kills it when
 * the program ends: there is no PID namespace to take it down (after-run/reap.c).
 */
#define _GNU_SOURCE
#include "direct.h"

#include <errno.h>
#include <grp.h>
#include <linux/capability.h>
#include <linux/securebits.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../common/compat.h"
#include "../common/errors.h"
#include "mounts.h"

static int capset_empty(void) {
  struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
  struct __user_cap_data_struct d[2];
  memset(d, 0, sizeof d);
  return (int)syscall(SYS_capset, &h, d);
}

void direct_drop_capabilities(void) {
  /* Needs CAP_SETPCAP; where the host lacks it, no_new_privs and the empty permitted set still hold. */
  prctl(PR_SET_SECUREBITS, SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP |
                               SECBIT_NO_SETUID_FIXUP_LOCKED | SECBIT_KEEP_CAPS_LOCKED |
                               SECBIT_NO_CAP_AMBIENT_RAISE | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED,
        0, 0, 0);
  for (int cap = 0; cap <= 63; cap++) {
    if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno != EINVAL && errno != EPERM)
      die("PR_CAPBSET_DROP: %s", strerror(errno));
  }
  prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
  if (getuid() == 0) setgroups(0, NULL); /* root's supplementary groups, while CAP_SETGID is still here */
  if (capset_empty() < 0) die("capset: %s", strerror(errno));
  struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
  struct __user_cap_data_struct d[2];
  if (syscall(SYS_capget, &h, d) < 0) die("capget: %s", strerror(errno));
  for (int k = 0; k < 2; k++)
    if (d[k].effective != 0 || d[k].permitted != 0 || d[k].inheritable != 0) die("capabilities are still held after dropping them");
}

void direct_enter(struct options *o) {
  if (mount_ops_count() > 0) die("--direct makes no mounts");
  if (strcmp(o->landlock.mode, "off") == 0) die("--direct needs Landlock (--landlock required)");
  o->landlock.mode = "required";
  if (setsid() < 0 && getpgrp() != getpid()) die("setsid: %s", strerror(errno));
}
