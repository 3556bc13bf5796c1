/*
 * A child in new namespaces that holds them while its parent opens them (/proc/PID/ns/…): for the
 * launcher's idmap user namespaces (launcher/idmap.c) and the fork server's network namespaces
 * (spawner/netpool.c). It shares the parent's memory (CLONE_VM, on a stack the caller gives it), so making
 * it copies no page tables. It runs SETUP in the new namespaces (may be NULL), says whether that worked,
 * and exits once the parent closes the release pipe.
 */
#define _GNU_SOURCE
#include "nschild.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

struct start {
  int (*setup)(void);
  int release[2], status[2];
};

static int holder(void *arg) {
  /* START stays as the parent left it until the parent has read the status (CLONE_VM). */
  const struct start *s = arg;
  int release = s->release[0], status = s->status[1];
  close(s->release[1]); /* its own copy of the descriptor table: only the parent's end may keep it open */
  close(s->status[0]);
  char ok = s->setup == NULL || s->setup() == 0 ? 'y' : 'n';
  if (write(status, &ok, 1) != 1) _exit(1);
  char b;
  while (read(release, &b, 1) < 0 && errno == EINTR) {
  }
  _exit(0);
}

pid_t ns_child_start(struct ns_child *c, int flags, int (*setup)(void), char *stack, size_t size) {
  struct start s = {.setup = setup};
  c->pid = -1;
  c->release = -1;
  if (pipe2(s.release, O_CLOEXEC) < 0) return -1;
  if (pipe2(s.status, O_CLOEXEC) < 0) {
    close(s.release[0]);
    close(s.release[1]);
    return -1;
  }
  pid_t pid = clone(holder, stack + size, CLONE_VM | flags | SIGCHLD, &s);
  int e = errno;
  close(s.status[1]);
  char ok = 'n';
  if (pid > 0 && read(s.status[0], &ok, 1) != 1) ok = 'n';
  close(s.status[0]);
  close(s.release[0]);
  c->pid = pid;
  c->release = s.release[1];
  if (pid > 0 && ok == 'y') return pid;
  ns_child_release(c);
  if (pid > 0) {
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {
    }
    c->pid = -1;
    e = EPROTO; /* SETUP failed in the child */
  }
  errno = e;
  return -1;
}

void ns_child_release(struct ns_child *c) {
  if (c->release >= 0) close(c->release);
  c->release = -1;
}
