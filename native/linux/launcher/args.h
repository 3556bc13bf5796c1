/*
 * PROGRAM's arguments (bwrap's), rewritten by the launcher before it runs them: descriptors and the run's
 * uid put in, the mounts of absent protected paths dropped, and bwrap's own network namespace dropped where
 * the fork server lent one.
 */
#ifndef ALEPH_LAUNCHER_ARGS_H
#define ALEPH_LAUNCHER_ARGS_H

/* --net-pool: PROG's first `--unshare-net` removed, so PROGRAM runs in this process's network namespace
 * (the fork server's, spawner/netpool.c); dies when PROG has none. */
void drop_unshare_net(char **prog);
/* Replaces @NAME (node NAME's descriptor number), @NAME:v (a second descriptor of it, for the helper to
 * check what bwrap mounted from the first), @UID and @GID (UID; dies when it is -1) in PROG. A mount of an
 * absent node (bwrap's --bind-fd and --ro-bind-fd, the helper's --verify and --mnt) is removed; a bind of
 * a node mounted read-only becomes --ro-bind-fd. */
void substitute_args(char **prog, long uid);

#endif
