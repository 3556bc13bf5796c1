/*
 * Starting the change watcher and connecting runs to it (watcher.h). The watcher is forked from the fork
 * server, dies with it (PR_SET_PDEATHSIG), and holds nothing of it but a control socket, on which each
 * run's connection arrives as a descriptor (SCM_RIGHTS). Should the watcher die, the next run starts a new
 * one (which marks the trees again from the start).
 */
#define _GNU_SOURCE
#include "watcher.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../common/fdpass.h"
#include "watch-loop.h"

static int ctl = -1;

static int start_watcher(void) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) return -1;
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    close(sv[0]);
    close(sv[1]);
    return -1;
  }
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    if (getppid() != parent) _exit(0);
    int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 || dup2(null, 2) < 0) _exit(1);
    if (dup2(sv[1], 3) < 0) _exit(1);
    syscall(SYS_close_range, 4, ~0U, 0);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    _exit(watch_loop(3));
  }
  close(sv[1]);
  return sv[0];
}

int watcher_connect(void) {
  for (int tries = 0; tries < 2; tries++) {
    if (ctl < 0) ctl = start_watcher();
    if (ctl < 0) return -1;
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) return -1;
    int sent = fdpass_send(ctl, "C", 1, &sv[1], 1);
    close(sv[1]);
    if (sent == 0) return sv[0];
    close(sv[0]);
    close(ctl); /* the watcher is gone: a new one */
    ctl = -1;
  }
  return -1;
}

void watcher_close_in_child(void) {
  if (ctl >= 0) close(ctl);
  ctl = -1;
}
