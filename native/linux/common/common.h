/* The launcher's and the fork server's declarations that have no header of their own yet (the helper's,
 * the probe's, the checks' and common/ have theirs). */
#ifndef ALEPH_COMMON_H
#define ALEPH_COMMON_H
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <linux/openat2.h>
#include <time.h>
#include <unistd.h>

#include "compat.h"
#include "errors.h"
#include "nschild.h"
#include "paths.h"
#include "report.h"
#include "../after-run/guard.h"
#include "../after-run/reap.h"
#include "../after-run/sweep.h"
#include "../launcher/launch.h"
#include "../spawner/spawner.h"

/* idmap.c: for the launcher's idmapped mounts, a user namespace mapping OWNER (GROUP) to TO, kept per
 * owner for the run; the children holding them are reaped by idmap_reap() after the run. */
int idmap_userns(uid_t owner, gid_t group, long to);
void idmap_reap(void);

/* netpool.c: the fork server's network namespaces (loopback up), one per session, lent to one run at a
 * time, and one fresh namespace waiting for the next session. */
#define NETPOOL_KEY_MAX 80
void netpool_init(void);
int netpool_wants_fill(void);
void netpool_fill(void);                 /* while idle: make the waiting fresh namespace */
int netpool_lend(const char *key);       /* a namespace for a run of session KEY, or -1 */
void netpool_return(int fd);             /* the run is over (-1: nothing was lent) */
void netpool_close_in_child(int keep);   /* a forked run keeps none of the pool's descriptors but KEEP */

/* stubs.c: the launcher's records of the stubs it made below a writable root. */
#define MAX_RECORDED 512
struct recorded {
  char kind; /* d: directory, f: empty file, c: a file holding "." */
  unsigned long long dev, ino;
  char rel[1024];
};
/* Reads a root's stub record ("KIND DEV INO REL" lines, oldest first) into ITEMS; returns how many. */
int read_record(int record, struct recorded *items, int max);
/* Removes (or parks under STATE_FD) the stubs RECORD lists below ROOT that are still the empty stubs
 * made, and empties RECORD. */
void remove_recorded(int state_fd, int root, int record);

/* park.c: stubs kept for the next run under --state (renamed, not recreated). 0 on success. */
int park_take(int state_fd, int parent_fd, const struct stat *parent, const char *base, char kind);
int park_return(int state_fd, int dirfd, const char *base, char kind, const struct stat *st);

extern char **environ;

#endif
