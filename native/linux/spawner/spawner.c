/*
 * `aleph-sandbox-init --spawner SOCKET`: a fork server for the driver (packages/driver-linux/src/spawner.ts;
 * spawner.h).
 *
 * Node forks itself to start a process, which costs milliseconds once its heap is large (page tables are
 * copied, then torn down by exec). This small process forks instead. The driver starts it once, with a
 * fixed environment, and sends it one request per run on stdin:
 *
 *   u32 length, then: u32 id, u32 flags (1: stdin from the driver; 2: the program is this helper's
 *   `--launch`, run in the forked child without executing the binary again), 16-byte token, u32 argc, argc
 *   NUL-terminated strings, u32 envc, envc "NAME=value" strings, the cwd, u32 nextra, and nextra blobs
 *   (u32 length + bytes) that become descriptors 3, 4, … (sealed memfds positioned at 0): request.c.
 *
 * For each request it connects to the driver's Unix socket SOCKET once per stream (stdin when asked,
 * stdout, stderr; each connection starts with the token and the stream's number), puts those sockets on
 * descriptors 0-2 (like Node's own stdio, which are sockets too), forks, and in the child starts a new
 * session and execs the program with exactly the given environment (start.c). On stdout it answers, one
 * line each (answer.c, runs.c):
 *
 *   S ID PID INO_OUT INO_ERR   started (INO_*: the socket inodes the program holds, to find stragglers)
 *   F ID ERRNO                 could not start (ERRNO from connect, fork or execve)
 *   E ID CODE SIGNAL           exited (CODE -1 when killed by SIGNAL); what was left of the run's process
 *                              group has been sent SIGKILL
 *
 * A run whose launcher arguments (before its `--`) hold `--net-pool KEY` joins a network namespace of the
 * server's pool (netpool.c: its session's, or one made ahead while idle), instead of bwrap making one.
 *
 * It exits when the driver closes its stdin or dies (PR_SET_PDEATHSIG); what it started then gets the
 * launcher's own parent-death signal and cleans up.
 */
#define _GNU_SOURCE
#include "spawner.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "../common/errors.h"
#include "netpool.h"
#include "runs.h"
#include "start.h"

/* SIGCHLD blocked and read from a descriptor instead, polled beside stdin. */
static int child_signals(void) {
  sigset_t chld;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  sigprocmask(SIG_BLOCK, &chld, NULL);
  int sfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
  if (sfd < 0) die("signalfd: %s", strerror(errno));
  return sfd;
}

/* Starts the run of every whole request in BUF (LEN bytes); how many bytes they took. */
static size_t start_runs(const unsigned char *buf, size_t len, const char *sock_path) {
  size_t off = 0;
  while (len - off >= 4) {
    uint32_t m;
    memcpy(&m, buf + off, 4);
    if (len - off - 4 < m) break;
    start_run(buf + off + 4, m, sock_path);
    off += 4 + m;
  }
  return off;
}

int spawner_main(int argc, char **argv) {
  if (argc != 3) die("usage: --spawner SOCKET");
  const char *sock_path = argv[2];
  netpool_init();
  runs_init();
  pid_t parent = getppid();
  prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
  if (getppid() != parent) return 0;
  /* Nothing else of this uid may read the tokens out of this process. */
  prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  signal(SIGPIPE, SIG_IGN);
  int sfd = child_signals();
  size_t cap = 1 << 16, len = 0;
  int fill_due = 1;
  unsigned char *buf = malloc(cap);
  if (buf == NULL) die("out of memory");
  for (;;) {
    struct pollfd p[2] = {{.fd = 0, .events = POLLIN}, {.fd = sfd, .events = POLLIN}};
    /* Idle (nothing to read) after a run ended: make the next run's network namespace. Not while a run
     * is starting: on two cores that would slow its set-up more than the namespace saves. */
    int ready = poll(p, 2, fill_due && netpool_wants_fill() ? 0 : -1);
    if (ready < 0) {
      if (errno == EINTR) continue;
      die("poll: %s", strerror(errno));
    }
    if (ready == 0) {
      netpool_fill();
      fill_due = 0;
      continue;
    }
    if (p[1].revents & POLLIN) {
      struct signalfd_siginfo si;
      while (read(sfd, &si, sizeof si) == (ssize_t)sizeof si) {
      }
      fill_due = reap_runs() || fill_due;
    }
    if (!(p[0].revents & (POLLIN | POLLHUP | POLLERR))) continue;
    if (len == cap) {
      if (cap >= (64u << 20)) die("a request larger than 64 MiB");
      cap *= 2;
      buf = realloc(buf, cap);
      if (buf == NULL) die("out of memory");
    }
    ssize_t n = read(0, buf + len, cap - len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return 0; /* the driver closed its end */
    len += (size_t)n;
    size_t off = start_runs(buf, len, sock_path);
    memmove(buf, buf + off, len - off);
    len -= off;
  }
}
