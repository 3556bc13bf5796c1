/* The count of PROGRAM's tasks (watch.h). */
#define _GNU_SOURCE
#include "watch.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include "../common/paths.h"

/* The walk stops counting here: far above any max_pids, and a bound on its own work. */
#define MAX_WALK 65536

static pthread_t thread;
static int running;
static long target;
static atomic_int stop;
static atomic_long peak; /* the most tasks seen at once */
static pid_t self, root;
static int in_pidns; /* ROOT is bwrap, whose child is the init of the sandbox's PID namespace */
static int nsproc = -1; /* the sandbox's own procfs, once found */

/* Reads the pids of the children file PATH into OUT (up to MAX, MAX_WALK in all); the number read. */
static int read_pids(const char *path, pid_t *out, int max) {
  char buf[4096];
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return 0; /* gone meanwhile */
  int n = 0;
  long cur = -1;
  ssize_t r;
  while ((r = read(fd, buf, sizeof buf)) > 0)
    for (ssize_t i = 0; i < r; i++) {
      if (buf[i] >= '0' && buf[i] <= '9') cur = (cur < 0 ? 0 : cur * 10) + (buf[i] - '0');
      else if (cur >= 0) {
        if (n < max) out[n++] = (pid_t)cur;
        cur = -1;
      }
    }
  if (cur >= 0 && n < max) out[n++] = (pid_t)cur;
  close(fd);
  return n;
}

/* Appends the pids of /proc/PID/task/TID/children to STACK (from *TOP). */
static void read_children(pid_t pid, const char *tid, pid_t *stack, int *top) {
  char path[96];
  snprintf(path, sizeof path, "/proc/%d/task/%s/children", (int)pid, tid);
  *top += read_pids(path, stack + *top, MAX_WALK - *top);
}

/* Every task of ROOT and below it now (this process's own threads not counted); stops at TARGET. */
static long count_tasks(pid_t *stack) {
  int top = 0;
  long count = 0;
  stack[top++] = root;
  while (top > 0 && count < target) {
    pid_t pid = stack[--top];
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    DIR *d = opendir(path);
    if (d == NULL) continue;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
      if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
      if (pid != self) count++;
      read_children(pid, e->d_name, stack, &top);
    }
    closedir(d);
  }
  return count;
}

/* 1 when the links /proc/A/ns/pid (host procfs) and NSPROC's 1/ns/pid name the same namespace. */
static int same_pidns(const char *init_ns, int dir) {
  char a[64] = {0}, b[64] = {0};
  if (readlink(init_ns, a, sizeof a - 1) <= 0 || readlinkat(dir, "1/ns/pid", b, sizeof b - 1) <= 0) return 0;
  return strcmp(a, b) == 0;
}

/* The procfs bwrap mounted for the sandbox, reached from its init's root (the host's /proc/PID/root, a link
 * the kernel keeps) without following any link below it, and kept only when it is a procfs whose PID 1 is
 * that init: the command can neither mount nor move a mount point, and what is not this is not used. */
static void find_nsproc(void) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/task/%d/children", (int)root, (int)root);
  pid_t init = 0;
  if (read_pids(path, &init, 1) <= 0) return;
  snprintf(path, sizeof path, "/proc/%d/root", (int)init);
  int r = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (r < 0) return;
  int p = open_path(r, "proc", RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS);
  close(r);
  if (p < 0) return;
  int d = openat(p, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  close(p);
  struct statfs fs;
  snprintf(path, sizeof path, "/proc/%d/ns/pid", (int)init);
  if (d >= 0 && fstatfs(d, &fs) == 0 && fs.f_type == PROC_SUPER_MAGIC && same_pidns(path, d)) nsproc = d;
  else if (d >= 0) close(d);
}

/* The processes (not threads) of the sandbox's PID namespace: the names in its procfs, in a few getdents. */
static long count_ns_processes(void) {
  char buf[16384];
  long n = 0;
  if (lseek(nsproc, 0, SEEK_SET) < 0) return 0;
  for (;;) {
    long got = syscall(SYS_getdents64, nsproc, buf, sizeof buf);
    if (got <= 0) return n;
    for (long off = 0; off < got;) {
      struct dirent64 *e = (struct dirent64 *)(buf + off);
      if (e->d_name[0] >= '1' && e->d_name[0] <= '9') n++;
      off += e->d_reclen;
    }
  }
}

static void *watch(void *arg) {
  (void)arg;
  /* This thread alone (the command's processes are not its children) runs ahead of the command and of
   * whatever else loads the machine, where the launcher may (CAP_SYS_NICE; elsewhere this fails and
   * nothing changes): a starved watcher misses the peak of a fork bomb that ends moments after its
   * refused fork. */
  (void)setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), -10);
  pid_t *stack = malloc(MAX_WALK * sizeof *stack);
  if (stack == NULL) return NULL;
  long n = 0, near_run = 0;
  for (unsigned tick = 0; !stop; tick++) {
    if (in_pidns && nsproc < 0 && tick < 400) find_nsproc();
    int near = n * 4 >= target * 3;
    /* Processes every 5 ms where the sandbox's procfs tells them cheaply (bwrap outside it counts 1);
     * every task, threads included, by the walk every 20th time (not near the limit in processes alone,
     * where the walk's own milliseconds could hide the peak), or every time without it. */
    n = nsproc >= 0 && (near || tick % 20 != 0) ? count_ns_processes() + 1 : count_tasks(stack);
    if (n > peak) peak = n;
    if (n >= target) break;
    /* Near the limit a refused fork is often followed at once by the end of what made it (a shell that
     * cannot fork exits, and the PID namespace goes with it): look again at once, for up to 2000 looks in
     * a row (a fraction of a second), then every millisecond. */
    near_run = n * 4 >= target * 3 ? near_run + 1 : 0;
    if (near_run > 0 && near_run < 2000 && nsproc >= 0) {
      sched_yield();
      continue;
    }
    long ms = near_run > 0 ? (nsproc >= 0 ? 1 : 10) : nsproc >= 0 ? 5 : 50; /* a walk costs ms */
    struct timespec pause = {0, ms * 1000 * 1000};
    nanosleep(&pause, NULL);
  }
  free(stack);
  if (nsproc >= 0) close(nsproc);
  nsproc = -1;
  return NULL;
}

void watch_start(pid_t from, long n) {
  if (n <= 0) return;
  target = n;
  self = getpid();
  root = from;
  in_pidns = from != self;
  /* The launcher's signals (stop signals kill PROGRAM) stay with its main thread. */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old);
  running = pthread_create(&thread, NULL, watch, NULL) == 0;
  pthread_sigmask(SIG_SETMASK, &old, NULL);
}

long watch_stop(void) {
  if (!running) return 0;
  stop = 1;
  pthread_join(thread, NULL);
  running = 0;
  return peak;
}
