/*
 * Starting one run of the fork server (start.h): its descriptors put on 0, 1, 2, 3, … in a forked child,
 * which starts a new session and execs the program with exactly the request's environment, or runs the
 * launcher in-process (flag 2, `--launch`) in the network namespace lent by the pool. A status pipe tells
 * a failed exec (its errno) from a start (EOF at the exec).
 */
#define _GNU_SOURCE
#include "start.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../after-run/check.h"
#include "../common/compat.h"
#include "../launcher/launch.h"
#include "../launcher/publish.h"
#include "answer.h"
#include "netpool.h"
#include "request.h"
#include "runs.h"
#include "../watcher/watcher.h"

static unsigned long long inode_of(int fd) {
  struct stat st;
  return fstat(fd, &st) == 0 ? (unsigned long long)st.st_ino : 0;
}

/* The session key of the launcher's `--net-pool KEY` (among its options, before its `--`), or NULL. */
static const char *net_pool_key(char **argv) {
  for (char **p = argv + 2; *p != NULL && p[1] != NULL && strcmp(*p, "--") != 0; p++)
    if (strcmp(*p, "--net-pool") == 0) return strlen(p[1]) < NETPOOL_KEY_MAX ? p[1] : NULL;
  return NULL;
}

/* Whether the launcher's options (before its `--`) hold `--journal`: only then may it ask the watcher. */
static int wants_journal(char **argv) {
  for (char **p = argv + 2; *p != NULL && strcmp(*p, "--") != 0; p++)
    if (strcmp(*p, "--journal") == 0) return 1;
  return 0;
}

/* In the forked child: joins NET (-1: none), puts Q's descriptors in place and runs the program; never
 * returns. STATUS: the pipe's write end, for execve's errno. WATCH: the change watcher's connection for an
 * in-process launcher (-1: none). */
static void run_child(const struct request *q, int net, int in_process, int status, int watch) {
  int fds[3 + REQUEST_MAX_EXTRA];
  memcpy(fds, q->fds, sizeof fds);
  netpool_close_in_child(net);
  /* Published ports listen on the host's loopback: made here, before this process leaves its namespace. */
  if (net >= 0 && in_process) publish_listen_early(q->argv);
  if (net >= 0) {
    launch_joined_net = setns(net, CLONE_NEWNET) == 0;
    close(net);
  }
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  prctl(PR_SET_PDEATHSIG, 0, 0, 0, 0);
  setsid();
  /* Move every descriptor above the highest target first, then into place. */
  for (int k = 0; k < q->nfds; k++) {
    int moved = fcntl(fds[k], F_DUPFD_CLOEXEC, 64);
    if (moved < 0) _exit(127);
    fds[k] = moved;
  }
  watcher_close_in_child();
  if (watch >= 0) {
    int moved = fcntl(watch, F_DUPFD_CLOEXEC, 64);
    close(watch);
    watch = moved;
  }
  for (int k = 0; k < q->nfds; k++)
    if (dup2(fds[k], k) < 0) _exit(127);
  /* The rest close on exec; the status pipe stays open until then, so EOF on it means started. */
  syscall(SYS_close_range, q->nfds, ~0U, 4 /* CLOSE_RANGE_CLOEXEC */);
  signal(SIGPIPE, SIG_DFL);
  int e = 0;
  if (q->cwd[0] != '\0' && chdir(q->cwd) < 0) e = errno;
  if (e == 0 && in_process) {
    /* The launcher is this very binary: run it here instead of executing it again. */
    close(status);
    if (watch >= 0) check_use_watcher(watch);
    environ = q->envp;
    exit(launch_main((int)q->argc, q->argv));
  }
  if (e == 0) {
    execve(q->argv[0], q->argv, q->envp);
    e = errno;
  }
  if (write(status, &e, sizeof e) < 0) _exit(127);
  _exit(127);
}

void start_run(const unsigned char *msg, uint32_t len, const char *sock_path) {
  struct request q;
  if (read_request(&q, msg, len) < 0) return;
  connect_stdio(&q, sock_path);
  int err = q.err;
  int slot = err == 0 ? free_run_slot() : -1;
  if (err == 0 && slot < 0) err = EAGAIN;
  int status[2] = {-1, -1};
  if (err == 0 && pipe2(status, O_CLOEXEC) < 0) err = errno;
  int in_process = err == 0 && (q.flags & 2) && q.argc >= 2 && strcmp(q.argv[1], "--launch") == 0;
  const char *net_key = in_process ? net_pool_key(q.argv) : NULL;
  int net = net_key != NULL ? netpool_lend(net_key) : -1;
  int watch = in_process && err == 0 && wants_journal(q.argv) ? watcher_connect() : -1;
  pid_t pid = -1;
  if (err == 0) {
    pid = fork();
    if (pid < 0) err = errno;
  }
  if (pid == 0) run_child(&q, net, in_process, status[1], watch);
  if (watch >= 0) close(watch);
  unsigned long long ino_out = q.fds[1] >= 0 ? inode_of(q.fds[1]) : 0, ino_err = q.fds[2] >= 0 ? inode_of(q.fds[2]) : 0;
  for (int k = 0; k < q.nfds; k++)
    if (q.fds[k] >= 0) close(q.fds[k]);
  if (status[1] >= 0) close(status[1]);
  if (pid > 0) {
    int e = 0;
    ssize_t got;
    while ((got = read(status[0], &e, sizeof e)) < 0 && errno == EINTR) {
    }
    add_run(slot, pid, q.id, net); /* the namespace goes back to the pool when the run is reaped */
    if (got == (ssize_t)sizeof e) err = e; /* execve failed; the child exits 127, reaped below */
  }
  if (status[0] >= 0) close(status[0]);
  if (pid <= 0) netpool_return(net);
  if (err != 0) {
    if (pid > 0) unanswered_run(slot); /* reaped without an answer */
    answer("F %u %d\n", q.id, err);
  } else {
    answer("S %u %d %llu %llu\n", q.id, (int)pid, ino_out, ino_err);
  }
  free(q.argv);
  free(q.envp);
}
