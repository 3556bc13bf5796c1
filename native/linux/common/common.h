/* The fork server's declarations that have no header of their own yet (every other part has its own). */
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
#include "../launcher/launch.h"
#include "../spawner/spawner.h"

/* netpool.c: the fork server's network namespaces (loopback up), one per session, lent to one run at a
 * time, and one fresh namespace waiting for the next session. */
#define NETPOOL_KEY_MAX 80
void netpool_init(void);
int netpool_wants_fill(void);
void netpool_fill(void);                 /* while idle: make the waiting fresh namespace */
int netpool_lend(const char *key);       /* a namespace for a run of session KEY, or -1 */
void netpool_return(int fd);             /* the run is over (-1: nothing was lent) */
void netpool_close_in_child(int keep);   /* a forked run keeps none of the pool's descriptors but KEEP */

extern char **environ;

#endif
