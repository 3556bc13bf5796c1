/*
 * Running PROGRAM from the launcher (program.h). Stop signals are blocked from the start, so one that
 * arrives while the launcher sets up is handled only once PROGRAM exists: the handler kills PROGRAM, and
 * the launcher goes on to clean up after it.
 */
#define _GNU_SOURCE
#include "program.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../common/errors.h"
#include "stage.h"

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

/* Writes TEXT to the /proc/self FILE, or exits PROGRAM's child with 125 saying why. A FILE that is not
 * there is skipped where OPTIONAL (gVisor has no /proc/self/setgroups). */
static void write_self(const char *file, const char *text, int optional) {
  char path[64];
  snprintf(path, sizeof path, "/proc/self/%s", file);
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0 && errno == ENOENT && optional) return;
  size_t n = strlen(text);
  if (fd < 0 || write(fd, text, n) != (ssize_t)n) {
    fprintf(stderr, "aleph-sandbox-init: launch: writing %s: %s\n", path, strerror(errno));
    _exit(125);
  }
  close(fd);
}

/* PROGRAM's own user namespace (this uid and gid as its 0, nothing else mapped) and network namespace. */
static void enter_outer_namespaces(void) {
  char uid_map[64], gid_map[64];
  snprintf(uid_map, sizeof uid_map, "0 %u 1\n", (unsigned)getuid());
  snprintf(gid_map, sizeof gid_map, "0 %u 1\n", (unsigned)getgid());
  if (unshare(CLONE_NEWUSER | CLONE_NEWNET) < 0) {
    fprintf(stderr, "aleph-sandbox-init: launch: user and network namespaces for bwrap: %s\n", strerror(errno));
    _exit(125);
  }
  write_self("setgroups", "deny", 1);
  write_self("uid_map", uid_map, 0);
  write_self("gid_map", gid_map, 0);
}

pid_t start_program(char **prog, const sigset_t *old, struct timespec *start, int outer_ns, int stage) {
  set_stop_handlers(on_signal);
  clock_gettime(CLOCK_REALTIME_COARSE, start); /* ctimes come from the same coarse clock */
  pid_t c = fork();
  if (c > 0) child_pid = c;
  sigprocmask(SIG_SETMASK, old, NULL); /* a stop that arrived during set-up kills PROGRAM now */
  if (c < 0) die("launch: fork: %s", strerror(errno));
  if (c == 0) {
    set_stop_handlers(SIG_DFL);
    prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    if (outer_ns) enter_outer_namespaces();
    else if (stage) stage_mounts(prog);
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
