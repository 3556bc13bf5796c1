/*
 * Running PROGRAM from the launcher (program.h). Stop signals are blocked from the start, so one that
 * arrives while the launcher sets up is handled only once PROGRAM exists: the handler kills PROGRAM, and
 * the launcher goes on to clean up after it.
 */
#define _GNU_SOURCE
#include "program.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../common/errors.h"

static volatile sig_atomic_t child_pid;

static void on_signal(int sig) {
  (void)sig;
  if (child_pid > 0) kill(child_pid, SIGKILL);
}

void hold_stop_signals(sigset_t *old) {
  pid_t parent = getppid();
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGHUP);
  sigprocmask(SIG_BLOCK, &stop_signals, old);
  /* The driver's death (even SIGKILL) reaches us as SIGTERM, which kills PROGRAM and lets us clean up. */
  prctl(PR_SET_PDEATHSIG, SIGTERM, 0, 0, 0);
  if (getppid() != parent) die("launch: the parent exited");
}

void enter_run_cgroup(const char *dir) {
  char path[4096];
  if (snprintf(path, sizeof path, "%s/cgroup.procs", dir) >= (int)sizeof path) die("cgroup path too long");
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0 || write(fd, "0\n", 2) != 2) die("joining %s: %s", dir, strerror(errno));
  close(fd);
}

static void set_stop_handlers(void (*handler)(int)) {
  struct sigaction sa = {.sa_handler = handler};
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGHUP, &sa, NULL);
}

pid_t start_program(char **prog, const sigset_t *old, struct timespec *start) {
  set_stop_handlers(on_signal);
  clock_gettime(CLOCK_REALTIME_COARSE, start); /* ctimes come from the same coarse clock */
  pid_t c = fork();
  if (c > 0) child_pid = c;
  sigprocmask(SIG_SETMASK, old, NULL); /* a stop that arrived during set-up kills PROGRAM now */
  if (c < 0) die("launch: fork: %s", strerror(errno));
  if (c == 0) {
    set_stop_handlers(SIG_DFL);
    prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    char *env[] = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", NULL};
    execve(prog[0], prog, env);
    fprintf(stderr, "aleph-sandbox-init: cannot execute %s: %s\n", prog[0], strerror(errno));
    _exit(125);
  }
  return c;
}

int exit_as_program(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  int sig = WTERMSIG(status);
  signal(sig, SIG_DFL);
  kill(getpid(), sig);
  return 128 + sig;
}
