/*
 * Tier 3, no namespaces: `aleph-sandbox-init --direct OPTIONS -- PROGRAM ARGS…`.
 *
 * The launcher (`--launch … --reap -- aleph-sandbox-init --direct …`) execs this on the host itself, where
 * bwrap could not create namespaces. It takes the same options as the in-sandbox mode except the mount
 * operations (there is no mount namespace to make them in), and differs in three steps:
 *   - it starts a new session (what bwrap's --new-session does);
 *   - without --uid it keeps the host's uid and drops every capability instead (identity.c's
 *     drop_capabilities): with no_new_privs, an execve as uid 0 cannot regain any. So on a root host the
 *     program keeps root's file identity (it edits a root-owned repository) with no privilege, and
 *     Landlock is what confines the filesystem;
 *   - Landlock is required: without it nothing would confine the filesystem.
 *
 * The launcher's `--reap` makes it a child subreaper, so whatever the program leaves behind (a daemon that
 * double-forked, a process in a session of its own) is reparented to the launcher, which kills it when
 * the program ends: there is no PID namespace to take it down (after-run/reap.c).
 */
#define _GNU_SOURCE
#include "direct.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "../common/errors.h"
#include "mounts.h"

void direct_enter(struct options *o) {
  if (mount_ops_count() > 0) die("--direct makes no mounts");
  if (strcmp(o->landlock.mode, "off") == 0) die("--direct needs Landlock (--landlock required)");
  o->landlock.mode = "required";
  if (setsid() < 0 && getpgrp() != getpid()) die("setsid: %s", strerror(errno));
}
