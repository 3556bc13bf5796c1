/*
 * `aleph-sandbox-init --spawner SOCKET`: a fork server for the driver (packages/driver-linux/src/spawner.ts).
 *
 * Node forks itself to start a process, which costs milliseconds once its heap is large (page tables are
 * copied, then torn down by exec). This small process forks instead. The driver starts it once, with a
 * fixed environment, and sends it one request per run on stdin:
 *
 *   u32 length, then: u32 id, u32 flags (1: stdin from the driver; 2: the program is this helper's
 *   `--launch`, run in the forked child without executing the binary again), 16-byte token, u32 argc, argc
 *   NUL-terminated strings, u32 envc, envc "NAME=value" strings, the cwd, u32 nextra, and nextra blobs
 *   (u32 length + bytes) that become descriptors 3, 4, … (sealed memfds positioned at 0).
 *
 * For each request it connects to the driver's Unix socket SOCKET once per stream (stdin when asked,
 * stdout, stderr; each connection starts with the token and the stream's number), puts those sockets on
 * descriptors 0-2 (like Node's own stdio, which are sockets too), forks, and in the child starts a new
 * session and execs the program with exactly the given environment. On stdout it answers, one line each:
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
#include "../common/common.h"

#include <poll.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/signalfd.h>

#define MAX_RUNS 4096

static const char *sock_path;
static struct {
  pid_t pid;
  uint32_t id;
  int net; /* the network namespace lent to the run (netpool.c), or -1 */
} runs[MAX_RUNS];

struct reader {
  const unsigned char *p, *end;
  int bad;
};

static uint32_t get_u32(struct reader *r) {
  if (r->end - r->p < 4) {
    r->bad = 1;
    return 0;
  }
  uint32_t v;
  memcpy(&v, r->p, 4);
  r->p += 4;
  return v;
}

static char *get_str(struct reader *r) {
  const unsigned char *nul = memchr(r->p, '\0', (size_t)(r->end - r->p));
  if (nul == NULL) {
    r->bad = 1;
    return NULL;
  }
  char *s = (char *)r->p;
  r->p = nul + 1;
  return s;
}

static void answer(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void answer(const char *fmt, ...) {
  char line[128];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  for (int off = 0; off < n;) {
    ssize_t w = write(1, line + off, (size_t)(n - off));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) exit(0); /* the driver is gone */
    off += (int)w;
  }
}

/* A connection to the driver for stream STREAM of the run with TOKEN; -1 with errno set on failure. */
static int connect_stream(const unsigned char *token, uint32_t stream) {
  int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) return -1;
  struct sockaddr_un a = {.sun_family = AF_UNIX};
  if (strlen(sock_path) >= sizeof a.sun_path) {
    close(s);
    errno = ENAMETOOLONG;
    return -1;
  }
  strcpy(a.sun_path, sock_path);
  unsigned char hello[20];
  memcpy(hello, token, 16);
  memcpy(hello + 16, &stream, 4);
  if (connect(s, (struct sockaddr *)&a, sizeof a) < 0 || write(s, hello, sizeof hello) != (ssize_t)sizeof hello) {
    int e = errno;
    close(s);
    errno = e;
    return -1;
  }
  return s;
}

static int data_fd(const unsigned char *bytes, uint32_t len) {
  int fd = memfd_create("aleph-data", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return -1;
  for (uint32_t off = 0; off < len;) {
    ssize_t w = write(fd, bytes + off, len - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      close(fd);
      return -1;
    }
    off += (uint32_t)w;
  }
  fcntl(fd, F_ADD_SEALS, F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE);
  lseek(fd, 0, SEEK_SET);
  return fd;
}

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

static void start_run(const unsigned char *msg, uint32_t len) {
  struct reader r = {msg, msg + len, 0};
  uint32_t id = get_u32(&r), flags = get_u32(&r);
  const unsigned char *token = r.p;
  if (r.end - r.p < 16) return;
  r.p += 16;
  uint32_t argc = get_u32(&r);
  if (argc == 0 || argc > 100000) r.bad = 1;
  char **argv = r.bad ? NULL : calloc(argc + 1, sizeof *argv);
  for (uint32_t k = 0; argv != NULL && k < argc && !r.bad; k++) argv[k] = get_str(&r);
  uint32_t envc = r.bad ? 0 : get_u32(&r);
  if (envc > 100000) r.bad = 1;
  char **envp = r.bad ? NULL : calloc(envc + 1, sizeof *envp);
  for (uint32_t k = 0; envp != NULL && k < envc && !r.bad; k++) envp[k] = get_str(&r);
  const char *cwd = r.bad ? NULL : get_str(&r);
  uint32_t nextra = r.bad ? 0 : get_u32(&r);
  int fds[3 + 16];
  int nfds = 3;
  for (int k = 0; k < 3 + 16; k++) fds[k] = -1;
  int err = r.bad || nextra > 16 || argv == NULL || envp == NULL ? EINVAL : 0;
  for (uint32_t k = 0; err == 0 && k < nextra; k++) {
    uint32_t n = get_u32(&r);
    if (r.bad || (uint32_t)(r.end - r.p) < n) {
      err = EINVAL;
      break;
    }
    fds[nfds] = data_fd(r.p, n);
    if (fds[nfds++] < 0) err = errno;
    r.p += n;
  }
  if (err == 0) {
    fds[0] = (flags & 1) ? connect_stream(token, 0) : open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (fds[0] < 0) err = errno;
  }
  for (uint32_t s = 1; err == 0 && s <= 2; s++) {
    fds[s] = connect_stream(token, s);
    if (fds[s] < 0) err = errno;
  }
  int slot = -1;
  for (int k = 0; err == 0 && k < MAX_RUNS && slot < 0; k++)
    if (runs[k].pid == 0) slot = k;
  if (err == 0 && slot < 0) err = EAGAIN;
  int status[2] = {-1, -1};
  if (err == 0 && pipe2(status, O_CLOEXEC) < 0) err = errno;
  int in_process = err == 0 && (flags & 2) && argc >= 2 && strcmp(argv[1], "--launch") == 0;
  const char *net_key = in_process ? net_pool_key(argv) : NULL;
  int net = net_key != NULL ? netpool_lend(net_key) : -1;
  pid_t pid = -1;
  if (err == 0) {
    pid = fork();
    if (pid < 0) err = errno;
  }
  if (pid == 0) {
    netpool_close_in_child(net);
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
    for (int k = 0; k < nfds; k++) {
      int moved = fcntl(fds[k], F_DUPFD_CLOEXEC, 64);
      if (moved < 0) _exit(127);
      fds[k] = moved;
    }
    for (int k = 0; k < nfds; k++)
      if (dup2(fds[k], k) < 0) _exit(127);
    /* The rest close on exec; the status pipe stays open until then, so EOF on it means started. */
    syscall(SYS_close_range, nfds, ~0U, 4 /* CLOSE_RANGE_CLOEXEC */);
    signal(SIGPIPE, SIG_DFL);
    int e = 0;
    if (cwd[0] != '\0' && chdir(cwd) < 0) e = errno;
    if (e == 0 && in_process) {
      /* The launcher is this very binary: run it here instead of executing it again. */
      close(status[1]);
      environ = envp;
      exit(launch_main((int)argc, argv));
    }
    if (e == 0) {
      execve(argv[0], argv, envp);
      e = errno;
    }
    if (write(status[1], &e, sizeof e) < 0) _exit(127);
    _exit(127);
  }
  unsigned long long ino_out = fds[1] >= 0 ? inode_of(fds[1]) : 0, ino_err = fds[2] >= 0 ? inode_of(fds[2]) : 0;
  for (int k = 0; k < nfds; k++)
    if (fds[k] >= 0) close(fds[k]);
  if (status[1] >= 0) close(status[1]);
  if (pid > 0) {
    int e = 0;
    ssize_t got;
    while ((got = read(status[0], &e, sizeof e)) < 0 && errno == EINTR) {
    }
    runs[slot].pid = pid;
    runs[slot].id = id;
    runs[slot].net = net; /* back to the pool when the run is reaped */
    if (got == (ssize_t)sizeof e) err = e; /* execve failed; the child exits 127, reaped below */
  }
  if (status[0] >= 0) close(status[0]);
  if (pid <= 0) netpool_return(net);
  if (err != 0) {
    if (pid > 0) runs[slot].id = UINT32_MAX; /* reaped without an answer */
    answer("F %u %d\n", id, err);
  } else {
    answer("S %u %d %llu %llu\n", id, (int)pid, ino_out, ino_err);
  }
  free(argv);
  free(envp);
}

/* Reaps what exited and answers E for each; whether anything did. */
static int reap(void) {
  int status, any = 0;
  pid_t pid;
  while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
    any = 1;
    for (int k = 0; k < MAX_RUNS; k++) {
      if (runs[k].pid != pid) continue;
      runs[k].pid = 0;
      kill(-pid, SIGKILL); /* what the run left in its process group goes with it (E says so) */
      netpool_return(runs[k].net);
      runs[k].net = -1;
      if (runs[k].id == UINT32_MAX) break;
      if (WIFEXITED(status)) answer("E %u %d 0\n", runs[k].id, WEXITSTATUS(status));
      else answer("E %u -1 %d\n", runs[k].id, WTERMSIG(status));
      break;
    }
  }
  return any;
}

int spawner_main(int argc, char **argv) {
  if (argc != 3) die("usage: --spawner SOCKET");
  sock_path = argv[2];
  netpool_init();
  for (int k = 0; k < MAX_RUNS; k++) runs[k].net = -1;
  pid_t parent = getppid();
  prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
  if (getppid() != parent) return 0;
  /* Nothing else of this uid may read the tokens out of this process. */
  prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  signal(SIGPIPE, SIG_IGN);
  sigset_t chld;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  sigprocmask(SIG_BLOCK, &chld, NULL);
  int sfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
  if (sfd < 0) die("signalfd: %s", strerror(errno));
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
      fill_due = reap() || fill_due;
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
    size_t off = 0;
    while (len - off >= 4) {
      uint32_t m;
      memcpy(&m, buf + off, 4);
      if (len - off - 4 < m) break;
      start_run(buf + off + 4, m);
      off += 4 + m;
    }
    memmove(buf, buf + off, len - off);
    len -= off;
  }
}
