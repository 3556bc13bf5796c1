/*
 * The fork server's network namespaces (netpool.h; start.c lends them, runs.c takes them back), for runs
 * whose launcher asks with `--net-pool KEY` (KEY names the session: its workspace and id, hashed by the
 * driver). Making a namespace costs about a millisecond of kernel work, and tearing one down as much
 * again; bwrap --unshare-net pays both in every run. Here:
 *   - a session's namespace is kept between its runs and lent to one run at a time: a run that starts
 *     while another of the session is under way gets a namespace of its own;
 *   - one fresh namespace waits for the next session, made while the server is idle;
 *   - at most MAX_IDLE sessions' namespaces are kept, the least recently used going first.
 * Sessions never share one. Nothing of a run outlives it in its namespace: its processes are gone when it
 * is returned (bwrap's PID namespace), and with them every socket; TIME_WAIT is switched off in each
 * namespace (tcp_max_tw_buckets 0: on a loopback-only network there is no late packet to wait for), so a
 * port a run closed is free at once for the next. A namespace is made by this (root) process and belongs
 * to the initial user namespace, as one bwrap makes as root does, so the command, without capabilities
 * there, can change none of its settings. Where namespaces cannot be made (not root, no CAP_SYS_ADMIN, a
 * seccomp filter), the pool stays empty and every run makes its own as before.
 */
#define _GNU_SOURCE
#include "netpool.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../common/loopback.h"
#include "../common/nschild.h"

#define MAX_IDLE 8
#define MAX_LENT 64

static int spare = -1;    /* a fresh namespace for the next session */
static int broken;        /* making one failed once: the host cannot */
static struct {
  char key[NETPOOL_KEY_MAX];
  int fd;
  unsigned long long used;
} idle[MAX_IDLE], lent[MAX_LENT];
static unsigned long long clock_ticks;

/* Run inside the new namespace: /proc/sys/net shows the writer's own. */
static int no_time_wait(void) {
  int fd = open("/proc/sys/net/ipv4/tcp_max_tw_buckets", O_WRONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  int ok = write(fd, "0\n", 2) == 2;
  close(fd);
  return ok ? 0 : -1;
}

int netpool_wants_fill(void) { return !broken && spare < 0; }

static int set_up(void) { return loopback_up() == 0 && no_time_wait() == 0 ? 0 : -1; }

/* Made and set up by a child (common/nschild.c) that holds it until the server has opened it: the server itself
 * never leaves its own namespace, which it may not be allowed back into (a root of a user namespace of
 * its own cannot enter the host's). */
void netpool_fill(void) {
  static char stack[16384] __attribute__((aligned(16)));
  if (!netpool_wants_fill()) return;
  struct ns_child c;
  int fresh = -1;
  if (ns_child_start(&c, CLONE_NEWNET, set_up, stack, sizeof stack) > 0) {
    char path[48];
    snprintf(path, sizeof path, "/proc/%d/ns/net", (int)c.pid);
    fresh = open(path, O_RDONLY | O_CLOEXEC);
    ns_child_release(&c);
    while (waitpid(c.pid, NULL, 0) < 0 && errno == EINTR) {
    }
  }
  if (fresh < 0) broken = 1;
  else spare = fresh;
}

int netpool_lend(const char *key) {
  int fd = -1;
  for (int i = 0; i < MAX_IDLE && fd < 0; i++) {
    if (idle[i].fd < 0 || strcmp(idle[i].key, key) != 0) continue;
    fd = idle[i].fd;
    idle[i].fd = -1;
  }
  if (fd < 0) {
    fd = spare;
    spare = -1;
  }
  if (fd < 0) return -1;
  for (int i = 0; i < MAX_LENT; i++) {
    if (lent[i].fd >= 0) continue;
    snprintf(lent[i].key, sizeof lent[i].key, "%s", key);
    lent[i].fd = fd;
    return fd;
  }
  close(fd); /* more runs under way than the pool tracks: this one makes its own */
  return -1;
}

void netpool_return(int fd) {
  int k = -1;
  for (int i = 0; i < MAX_LENT && k < 0; i++)
    if (lent[i].fd == fd) k = i;
  if (fd < 0 || k < 0) return;
  lent[k].fd = -1;
  int slot = -1, oldest = -1;
  for (int i = 0; i < MAX_IDLE; i++) {
    if (idle[i].fd >= 0 && strcmp(idle[i].key, lent[k].key) == 0) {
      close(fd); /* the session's runs overlapped: it keeps one */
      return;
    }
    if (idle[i].fd < 0) slot = i;
    else if (oldest < 0 || idle[i].used < idle[oldest].used) oldest = i;
  }
  if (slot < 0) {
    close(idle[oldest].fd);
    slot = oldest;
  }
  memcpy(idle[slot].key, lent[k].key, sizeof idle[slot].key);
  idle[slot].fd = fd;
  idle[slot].used = ++clock_ticks;
}

void netpool_init(void) {
  for (int i = 0; i < MAX_IDLE; i++) idle[i].fd = -1;
  for (int i = 0; i < MAX_LENT; i++) lent[i].fd = -1;
}

void netpool_close_in_child(int keep) {
  if (spare >= 0 && spare != keep) close(spare);
  for (int i = 0; i < MAX_IDLE; i++)
    if (idle[i].fd >= 0 && idle[i].fd != keep) close(idle[i].fd);
  for (int i = 0; i < MAX_LENT; i++)
    if (lent[i].fd >= 0 && lent[i].fd != keep) close(lent[i].fd);
}
