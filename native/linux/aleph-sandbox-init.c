/*
 * aleph-sandbox-init: the last step before the sandboxed program runs.
 *
 * bwrap starts this inside the new namespaces. In order it:
 *   1. drops to an unprivileged identity when asked (--uid/--gid; the host runs as root), clearing the
 *      capability bounding set first, so the program keeps neither capabilities nor root's file identity;
 *   2. sets no_new_privs;
 *   3. applies a Landlock ruleset (--ll-ro/--ll-rw/--ll-dev paths, optional TCP connect ports, scoping),
 *      in best-effort or required mode;
 *   4. forks the network bridge (--bridge PORT:PATH): 127.0.0.1:PORT inside the namespace, relayed to the
 *      host proxy's Unix socket;
 *   5. applies resource limits (--rlimit): after the identity change, so RLIMIT_NPROC counts the new uid,
 *      and after the bridge fork, so the limit is the program's alone;
 *   6. closes every file descriptor above 2;
 *   7. loads the seccomp-BPF program read from --seccomp-fd;
 *   8. execs the program.
 *
 * `aleph-sandbox-init --enter-cgroup DIR -- PROGRAM…` runs on the host instead: it moves itself into the
 * cgroup DIR (writing to DIR/cgroup.procs) and execs PROGRAM (bwrap), so nothing bwrap starts escapes it.
 *
 * Setup failures exit 125 with a line starting "aleph-sandbox-init:" on stderr. A program that cannot be
 * executed exits 127 (not found) or 126, as a shell would.
 * `aleph-sandbox-init --probe` prints what this kernel supports as one JSON line.
 */
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
#include <unistd.h>

#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#define SYS_landlock_add_rule 445
#define SYS_landlock_restrict_self 446
#endif
#ifndef SYS_close_range
#define SYS_close_range 436
#endif
#ifndef PR_CAP_AMBIENT
#define PR_CAP_AMBIENT 47
#define PR_CAP_AMBIENT_CLEAR_ALL 4
#endif

/* Landlock UAPI, defined here so older headers still build this. */
#define LL_CREATE_RULESET_VERSION (1U << 0)
#define LL_RULE_PATH_BENEATH 1
#define LL_RULE_NET_PORT 2
#define LL_FS_EXECUTE (1ULL << 0)
#define LL_FS_WRITE_FILE (1ULL << 1)
#define LL_FS_READ_FILE (1ULL << 2)
#define LL_FS_READ_DIR (1ULL << 3)
#define LL_FS_REMOVE_DIR (1ULL << 4)
#define LL_FS_REMOVE_FILE (1ULL << 5)
#define LL_FS_MAKE_CHAR (1ULL << 6)
#define LL_FS_MAKE_DIR (1ULL << 7)
#define LL_FS_MAKE_REG (1ULL << 8)
#define LL_FS_MAKE_SOCK (1ULL << 9)
#define LL_FS_MAKE_FIFO (1ULL << 10)
#define LL_FS_MAKE_BLOCK (1ULL << 11)
#define LL_FS_MAKE_SYM (1ULL << 12)
#define LL_FS_REFER (1ULL << 13)    /* ABI 2 */
#define LL_FS_TRUNCATE (1ULL << 14) /* ABI 3 */
#define LL_FS_IOCTL_DEV (1ULL << 15) /* ABI 5 */
#define LL_NET_BIND_TCP (1ULL << 0)  /* ABI 4 */
#define LL_NET_CONNECT_TCP (1ULL << 1)
#define LL_SCOPE_ABSTRACT_UNIX (1ULL << 0) /* ABI 6 */
#define LL_SCOPE_SIGNAL (1ULL << 1)

struct ll_ruleset_attr {
  uint64_t handled_access_fs;
  uint64_t handled_access_net;
  uint64_t scoped;
};
struct ll_path_beneath_attr {
  uint64_t allowed_access;
  int32_t parent_fd;
} __attribute__((packed));
struct ll_net_port_attr {
  uint64_t allowed_access;
  uint64_t port;
};

#define MAX_ITEMS 256

static void die(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("aleph-sandbox-init: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  exit(125);
}

static int landlock_abi(void) {
  long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LL_CREATE_RULESET_VERSION);
  return abi < 0 ? 0 : (int)abi;
}

struct path_rule {
  const char *path;
  char kind; /* 'r' read+exec, 'w' read+write+exec, 'd' device directory, 'l' list directories only */
};

struct options {
  long uid, gid;
  struct {
    int resource;
    rlim_t soft, hard;
  } rlimits[16];
  int nrlimits;
  const char *landlock_mode; /* off | best-effort | required */
  struct path_rule paths[MAX_ITEMS];
  int npaths;
  int net_handled;
  long connect_ports[16];
  int nconnect;
  int scope;
  long bridge_port;
  const char *bridge_path;
  int seccomp_fd;
  char **argv;
};

static long parse_long(const char *s, const char *what) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno != 0 || *end != '\0' || end == s) die("bad %s: %s", what, s);
  return v;
}

static int rlimit_resource(const char *name) {
  if (strcmp(name, "AS") == 0) return RLIMIT_AS;
  if (strcmp(name, "NPROC") == 0) return RLIMIT_NPROC;
  if (strcmp(name, "CORE") == 0) return RLIMIT_CORE;
  if (strcmp(name, "NOFILE") == 0) return RLIMIT_NOFILE;
  if (strcmp(name, "FSIZE") == 0) return RLIMIT_FSIZE;
  if (strcmp(name, "CPU") == 0) return RLIMIT_CPU;
  die("unknown rlimit %s", name);
  return -1;
}

static void parse_args(int argc, char **argv, struct options *o) {
  memset(o, 0, sizeof *o);
  o->uid = o->gid = -1;
  o->landlock_mode = "off";
  o->seccomp_fd = -1;
  int i = 1;
  for (; i < argc; i++) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "--") == 0) {
      i++;
      break;
    }
    if (v == NULL) die("option %s needs a value", a);
    if (strcmp(a, "--uid") == 0) o->uid = parse_long(v, "uid");
    else if (strcmp(a, "--gid") == 0) o->gid = parse_long(v, "gid");
    else if (strcmp(a, "--rlimit") == 0) {
      char name[16];
      unsigned long long soft, hard;
      int n = sscanf(v, "%15[A-Z]=%llu:%llu", name, &soft, &hard);
      if (n == 2) hard = soft;
      else if (n != 3) die("bad --rlimit %s (want NAME=SOFT[:HARD])", v);
      if (o->nrlimits >= 16) die("too many --rlimit");
      o->rlimits[o->nrlimits].resource = rlimit_resource(name);
      o->rlimits[o->nrlimits].soft = (rlim_t)soft;
      o->rlimits[o->nrlimits].hard = (rlim_t)hard;
      o->nrlimits++;
    } else if (strcmp(a, "--landlock") == 0) o->landlock_mode = v;
    else if (strcmp(a, "--ll-ro") == 0 || strcmp(a, "--ll-rw") == 0 || strcmp(a, "--ll-dev") == 0 ||
             strcmp(a, "--ll-list") == 0) {
      if (o->npaths >= MAX_ITEMS) die("too many Landlock paths");
      o->paths[o->npaths].path = v;
      o->paths[o->npaths].kind = strcmp(a, "--ll-ro") == 0 ? 'r' : strcmp(a, "--ll-rw") == 0 ? 'w' : strcmp(a, "--ll-dev") == 0 ? 'd' : 'l';
      o->npaths++;
    } else if (strcmp(a, "--ll-net") == 0) o->net_handled = strcmp(v, "on") == 0;
    else if (strcmp(a, "--ll-connect") == 0) {
      if (o->nconnect >= 16) die("too many --ll-connect");
      o->connect_ports[o->nconnect++] = parse_long(v, "port");
    } else if (strcmp(a, "--ll-scope") == 0) o->scope = strcmp(v, "on") == 0;
    else if (strcmp(a, "--bridge") == 0) {
      char *colon = strchr(v, ':');
      if (colon == NULL) die("bad --bridge %s (want PORT:PATH)", v);
      *colon = '\0';
      o->bridge_port = parse_long(v, "bridge port");
      o->bridge_path = colon + 1;
    } else if (strcmp(a, "--seccomp-fd") == 0) o->seccomp_fd = (int)parse_long(v, "fd");
    else die("unknown option %s", a);
    i++;
  }
  if (i >= argc) die("no program given after --");
  o->argv = &argv[i];
}

static void drop_identity(const struct options *o) {
  if (o->uid < 0) return;
  /* Empty the bounding set (needs CAP_SETPCAP, kept by bwrap for this) and the ambient set. */
  for (int cap = 0; cap <= 63; cap++) {
    if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno != EINVAL && errno != EPERM) die("PR_CAPBSET_DROP: %s", strerror(errno));
  }
  prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
  if (setgroups(0, NULL) < 0) die("setgroups: %s", strerror(errno));
  if (setresgid((gid_t)o->gid, (gid_t)o->gid, (gid_t)o->gid) < 0) die("setresgid(%ld): %s", o->gid, strerror(errno));
  if (setresuid((uid_t)o->uid, (uid_t)o->uid, (uid_t)o->uid) < 0) die("setresuid(%ld): %s", o->uid, strerror(errno));
  /* A uid change from 0 clears the permitted and effective sets; make sure nothing came back. */
  if (setresuid(0, 0, 0) == 0) die("could still regain uid 0 after dropping identity");
}

static void apply_rlimits(const struct options *o) {
  for (int i = 0; i < o->nrlimits; i++) {
    struct rlimit r = {o->rlimits[i].soft, o->rlimits[i].hard};
    if (setrlimit(o->rlimits[i].resource, &r) < 0) die("setrlimit(%d): %s", o->rlimits[i].resource, strerror(errno));
  }
}

static uint64_t fs_handled(int abi) {
  uint64_t all = LL_FS_EXECUTE | LL_FS_WRITE_FILE | LL_FS_READ_FILE | LL_FS_READ_DIR | LL_FS_REMOVE_DIR |
                 LL_FS_REMOVE_FILE | LL_FS_MAKE_CHAR | LL_FS_MAKE_DIR | LL_FS_MAKE_REG | LL_FS_MAKE_SOCK |
                 LL_FS_MAKE_FIFO | LL_FS_MAKE_BLOCK | LL_FS_MAKE_SYM;
  if (abi >= 2) all |= LL_FS_REFER;
  if (abi >= 3) all |= LL_FS_TRUNCATE;
  if (abi >= 5) all |= LL_FS_IOCTL_DEV;
  return all;
}

/** Returns the ABI applied, 0 when Landlock is unavailable in best-effort mode. */
static int apply_landlock(const struct options *o) {
  if (strcmp(o->landlock_mode, "off") == 0) return 0;
  int required = strcmp(o->landlock_mode, "required") == 0;
  int abi = landlock_abi();
  if (abi <= 0) {
    if (required) die("Landlock is required but this kernel does not support it");
    return 0;
  }
  uint64_t handled = fs_handled(abi);
  struct ll_ruleset_attr attr = {.handled_access_fs = handled};
  size_t size = sizeof(uint64_t);
  if (abi >= 4 && o->net_handled) {
    attr.handled_access_net = LL_NET_BIND_TCP | LL_NET_CONNECT_TCP;
    size = 2 * sizeof(uint64_t);
  }
  if (abi >= 6 && o->scope) {
    attr.scoped = LL_SCOPE_ABSTRACT_UNIX | LL_SCOPE_SIGNAL;
    size = 3 * sizeof(uint64_t);
  }
  int ruleset = (int)syscall(SYS_landlock_create_ruleset, &attr, size, 0);
  if (ruleset < 0) die("landlock_create_ruleset: %s", strerror(errno));
  uint64_t read_exec = LL_FS_EXECUTE | LL_FS_READ_FILE | LL_FS_READ_DIR;
  uint64_t file_rights = LL_FS_EXECUTE | LL_FS_WRITE_FILE | LL_FS_READ_FILE | (abi >= 3 ? LL_FS_TRUNCATE : 0) |
                         (abi >= 5 ? LL_FS_IOCTL_DEV : 0);
  for (int i = 0; i < o->npaths; i++) {
    int fd = open(o->paths[i].path, O_PATH | O_CLOEXEC);
    if (fd < 0) {
      if (errno == ENOENT) continue; /* not mounted here (e.g. /lib32) */
      die("open %s for Landlock: %s", o->paths[i].path, strerror(errno));
    }
    uint64_t access;
    switch (o->paths[i].kind) {
    case 'r': access = read_exec; break;
    case 'l': access = LL_FS_READ_DIR; break;
    case 'd': access = read_exec | LL_FS_WRITE_FILE | (abi >= 3 ? LL_FS_TRUNCATE : 0) | (abi >= 5 ? LL_FS_IOCTL_DEV : 0); break;
    default: access = handled; break;
    }
    struct stat st;
    if (fstat(fd, &st) == 0 && !S_ISDIR(st.st_mode)) access &= file_rights;
    struct ll_path_beneath_attr rule = {.allowed_access = access & handled, .parent_fd = fd};
    if (syscall(SYS_landlock_add_rule, ruleset, LL_RULE_PATH_BENEATH, &rule, 0) < 0)
      die("landlock_add_rule %s: %s", o->paths[i].path, strerror(errno));
    close(fd);
  }
  if (abi >= 4 && o->net_handled) {
    for (int i = 0; i < o->nconnect; i++) {
      struct ll_net_port_attr rule = {.allowed_access = LL_NET_CONNECT_TCP, .port = (uint64_t)o->connect_ports[i]};
      if (syscall(SYS_landlock_add_rule, ruleset, LL_RULE_NET_PORT, &rule, 0) < 0)
        die("landlock_add_rule port %ld: %s", o->connect_ports[i], strerror(errno));
    }
  }
  if (syscall(SYS_landlock_restrict_self, ruleset, 0) < 0) die("landlock_restrict_self: %s", strerror(errno));
  close(ruleset);
  return abi;
}

/* ── The bridge: 127.0.0.1:PORT in the sandbox's namespace → the host proxy's Unix socket. ── */

#define BUF 65536
#define PIPE_BYTES (1 << 20)
struct half {
  char buf[BUF]; /* copy fallback */
  size_t len, off;
  int pipe[2];   /* splice path: bytes sit in the pipe between the two sockets */
  size_t inpipe;
  int eof;
};
struct conn {
  int fd[2];          /* 0: client (TCP), 1: proxy (Unix) */
  struct half dir[2]; /* dir[0]: client→proxy, dir[1]: proxy→client */
  int shut[2];        /* write side of fd[i] shut down */
  int copy;           /* splice unsupported: copy through buf */
};

static size_t pending(const struct half *h) { return h->inpipe + (h->len - h->off); }

static void update_events(int ep, struct conn *c) {
  for (int i = 0; i < 2; i++) {
    uint32_t e = 0;
    if (!c->dir[i].eof && pending(&c->dir[i]) == 0) e |= EPOLLIN;   /* room to read from fd[i] */
    if (pending(&c->dir[1 - i]) > 0) e |= EPOLLOUT;                  /* data waiting for fd[i] */
    struct epoll_event ev = {.events = e, .data.u64 = (uint64_t)(uintptr_t)c | (uint64_t)i};
    epoll_ctl(ep, EPOLL_CTL_MOD, c->fd[i], &ev);
  }
}

/* Moves what it can in one direction. Returns -1 on a hard error. */
static int move(struct conn *c, int i) {
  struct half *h = &c->dir[i];
  int from = c->fd[i], to = c->fd[1 - i];
  for (;;) {
    if (!c->copy) {
      if (h->inpipe > 0) {
        ssize_t w = splice(h->pipe[0], NULL, to, NULL, h->inpipe, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
        if (w < 0) return errno == EAGAIN ? 0 : -1;
        h->inpipe -= (size_t)w;
        if (h->inpipe > 0) return 0;
      }
      if (h->eof) return 0;
      ssize_t r = splice(from, NULL, h->pipe[1], NULL, PIPE_BYTES, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
      if (r == 0) {
        h->eof = 1;
        return 0;
      }
      if (r < 0) {
        if (errno == EAGAIN) return 0;
        if (errno == EINVAL) {
          c->copy = 1; /* this socket pair cannot splice: fall back to copying */
          continue;
        }
        return -1;
      }
      h->inpipe += (size_t)r;
      continue;
    }
    if (h->len > h->off) {
      ssize_t w = send(to, h->buf + h->off, h->len - h->off, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (w < 0) return (errno == EAGAIN || errno == EWOULDBLOCK) ? 0 : -1;
      h->off += (size_t)w;
      if (h->off < h->len) return 0;
      h->off = h->len = 0;
    }
    if (h->eof) return 0;
    ssize_t r = recv(from, h->buf, BUF, MSG_DONTWAIT);
    if (r == 0) {
      h->eof = 1;
      return 0;
    }
    if (r < 0) return (errno == EAGAIN || errno == EWOULDBLOCK) ? 0 : -1;
    h->len = (size_t)r;
    h->off = 0;
  }
}

/* Moves data both ways; returns 0 when the connection is finished. */
static int pump(int ep, struct conn *c) {
  for (int i = 0; i < 2; i++) {
    if (move(c, i) < 0) return 0;
    struct half *h = &c->dir[i];
    if (h->eof && pending(h) == 0 && !c->shut[1 - i]) {
      shutdown(c->fd[1 - i], SHUT_WR);
      c->shut[1 - i] = 1;
    }
  }
  if (c->dir[0].eof && c->dir[1].eof && pending(&c->dir[0]) == 0 && pending(&c->dir[1]) == 0) return 0;
  update_events(ep, c);
  return 1;
}

static void free_conn(struct conn *c) {
  close(c->fd[0]);
  close(c->fd[1]);
  for (int i = 0; i < 2; i++) {
    if (c->dir[i].pipe[0] >= 0) close(c->dir[i].pipe[0]);
    if (c->dir[i].pipe[1] >= 0) close(c->dir[i].pipe[1]);
  }
  free(c);
}

static void bridge_loop(int lfd, const char *path) {
  signal(SIGPIPE, SIG_IGN);
  int ep = epoll_create1(EPOLL_CLOEXEC);
  if (ep < 0) _exit(1);
  struct epoll_event lev = {.events = EPOLLIN, .data.u64 = 0};
  epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &lev);
  struct sockaddr_un addr = {.sun_family = AF_UNIX};
  strncpy(addr.sun_path, path, sizeof addr.sun_path - 1);
  struct epoll_event events[64];
  for (;;) {
    int n = epoll_wait(ep, events, 64, -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      _exit(1);
    }
    for (int k = 0; k < n; k++) {
      if (events[k].data.u64 == 0) {
        int cfd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (cfd < 0) continue;
        int pfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (pfd < 0 || connect(pfd, (struct sockaddr *)&addr, sizeof addr) < 0) {
          if (pfd >= 0) close(pfd);
          close(cfd);
          continue;
        }
        fcntl(pfd, F_SETFL, fcntl(pfd, F_GETFL) | O_NONBLOCK);
        struct conn *c = calloc(1, sizeof *c);
        if (c == NULL) {
          close(cfd);
          close(pfd);
          continue;
        }
        c->fd[0] = cfd;
        c->fd[1] = pfd;
        for (int i = 0; i < 2; i++) {
          if (pipe2(c->dir[i].pipe, O_NONBLOCK | O_CLOEXEC) < 0) {
            c->dir[i].pipe[0] = c->dir[i].pipe[1] = -1;
            c->copy = 1;
          } else {
            fcntl(c->dir[i].pipe[1], F_SETPIPE_SZ, PIPE_BYTES); /* best effort */
          }
        }
        for (int i = 0; i < 2; i++) {
          struct epoll_event ev = {.events = EPOLLIN, .data.u64 = (uint64_t)(uintptr_t)c | (uint64_t)i};
          epoll_ctl(ep, EPOLL_CTL_ADD, c->fd[i], &ev);
        }
        continue;
      }
      struct conn *c = (struct conn *)(uintptr_t)(events[k].data.u64 & ~(uint64_t)1);
      if (c == NULL) continue; /* freed earlier in this batch */
      if (!pump(ep, c)) {
        epoll_ctl(ep, EPOLL_CTL_DEL, c->fd[0], NULL);
        epoll_ctl(ep, EPOLL_CTL_DEL, c->fd[1], NULL);
        /* Later events in this batch may still point at c. */
        for (int j = k + 1; j < n; j++) {
          if ((struct conn *)(uintptr_t)(events[j].data.u64 & ~(uint64_t)1) == c) events[j].data.u64 = 1;
        }
        free_conn(c);
      }
    }
  }
}

static void start_bridge(const struct options *o, int lfd) {
  pid_t child = fork();
  if (child < 0) die("fork bridge: %s", strerror(errno));
  if (child == 0) {
    /* Double fork: the bridge is adopted by the namespace's init, not by the program. */
    pid_t grandchild = fork();
    if (grandchild != 0) _exit(grandchild < 0 ? 1 : 0);
    setsid();
    /* Keep only the listening socket: the program's stdio pipes must not stay open in the bridge. */
    for (int fd = 0; fd < 3; fd++) {
      int null = open("/dev/null", O_RDWR);
      if (null >= 0 && null != fd) {
        dup2(null, fd);
        close(null);
      }
    }
    syscall(SYS_close_range, 3, lfd - 1, 0);
    syscall(SYS_close_range, lfd + 1, ~0U, 0);
    bridge_loop(lfd, o->bridge_path);
    _exit(0);
  }
  int status;
  waitpid(child, &status, 0);
  close(lfd);
}

static int bridge_listen(long port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) die("bridge socket: %s", strerror(errno));
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(fd, (struct sockaddr *)&a, sizeof a) < 0) die("bridge bind 127.0.0.1:%ld: %s", port, strerror(errno));
  if (listen(fd, 512) < 0) die("bridge listen: %s", strerror(errno));
  return fd;
}

static struct sock_fprog read_seccomp(int fd) {
  struct sock_fprog prog = {0};
  size_t cap = 8192, len = 0;
  unsigned char *buf = malloc(cap);
  if (buf == NULL) die("out of memory");
  for (;;) {
    if (len == cap) {
      cap *= 2;
      if (cap > (1 << 20)) die("seccomp program too large");
      buf = realloc(buf, cap);
      if (buf == NULL) die("out of memory");
    }
    ssize_t r = read(fd, buf + len, cap - len);
    if (r < 0) {
      if (errno == EINTR) continue;
      die("read seccomp program: %s", strerror(errno));
    }
    if (r == 0) break;
    len += (size_t)r;
  }
  if (len == 0 || len % sizeof(struct sock_filter) != 0) die("seccomp program has %zu bytes, not a whole number of instructions", len);
  prog.len = (unsigned short)(len / sizeof(struct sock_filter));
  prog.filter = (struct sock_filter *)buf;
  return prog;
}

static void close_extra_fds(int keep) {
  if (keep >= 3) {
    if (keep > 3 && syscall(SYS_close_range, 3, keep - 1, 0) < 0 && errno != ENOSYS) die("close_range: %s", strerror(errno));
    if (syscall(SYS_close_range, keep + 1, ~0U, 0) < 0 && errno != ENOSYS) die("close_range: %s", strerror(errno));
  } else if (syscall(SYS_close_range, 3, ~0U, 0) < 0 && errno != ENOSYS) {
    die("close_range: %s", strerror(errno));
  }
}

static int probe(void) {
  int abi = landlock_abi();
  int seccomp = prctl(PR_GET_SECCOMP, 0, 0, 0, 0) >= 0;
  printf("{\"landlock_abi\":%d,\"seccomp\":%s,\"uid\":%d}\n", abi, seccomp ? "true" : "false", (int)getuid());
  return 0;
}

static int enter_cgroup(int argc, char **argv) {
  if (argc < 5 || strcmp(argv[3], "--") != 0) die("usage: --enter-cgroup DIR -- PROGRAM [ARGS]");
  char path[4096];
  if (snprintf(path, sizeof path, "%s/cgroup.procs", argv[2]) >= (int)sizeof path) die("cgroup path too long");
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) die("open %s: %s", path, strerror(errno));
  if (write(fd, "0\n", 2) != 2) die("joining %s: %s", argv[2], strerror(errno));
  close(fd);
  execvp(argv[4], &argv[4]);
  die("cannot execute %s: %s", argv[4], strerror(errno));
  return 125;
}

#ifndef ALEPH_HELPER_VERSION
#define ALEPH_HELPER_VERSION "0.1.0"
#endif

int main(int argc, char **argv) {
  if (argc == 2 && strcmp(argv[1], "--version") == 0) {
    printf("aleph-sandbox-init %s\n", ALEPH_HELPER_VERSION);
    return 0;
  }
  if (argc == 2 && strcmp(argv[1], "--probe") == 0) return probe();
  if (argc >= 2 && strcmp(argv[1], "--enter-cgroup") == 0) return enter_cgroup(argc, argv);
  struct options o;
  parse_args(argc, argv, &o);

  drop_identity(&o);
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) die("PR_SET_NO_NEW_PRIVS: %s", strerror(errno));

  /* The bridge's listening socket exists before Landlock, so no bind right is needed afterwards. */
  int lfd = o.bridge_path != NULL ? bridge_listen(o.bridge_port) : -1;
  apply_landlock(&o);
  if (lfd >= 0) start_bridge(&o, lfd);
  apply_rlimits(&o);

  struct sock_fprog prog = {0};
  if (o.seccomp_fd >= 0) {
    prog = read_seccomp(o.seccomp_fd);
    close(o.seccomp_fd);
  }
  close_extra_fds(-1);
  if (prog.filter != NULL && prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) < 0) {
    die("loading seccomp filter: %s", strerror(errno));
  }
  execvp(o.argv[0], o.argv);
  int e = errno;
  fprintf(stderr, "aleph-sandbox-init: cannot execute %s: %s\n", o.argv[0], strerror(e));
  return e == ENOENT ? 127 : 126;
}
