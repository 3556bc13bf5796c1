/*
 * aleph-sandbox-init: the last step before the sandboxed program runs.
 *
 * bwrap starts this inside the new namespaces. In order it:
 *   0. makes the user-path mounts it is given (--mnt, --tmpfs-at, --mask-at) and checks the ones bwrap
 *      made from descriptors (--verify): see mounts.c;
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
 *   8. execs the program with the environment read from --env-fd (NUL-separated NAME=VALUE entries):
 *      the command's environment never passes through bwrap or this helper's own environment.
 *
 * `aleph-sandbox-init --launch … -- bwrap …` runs on the host instead: see launch.c.
 * `aleph-sandbox-init --spawner SOCKET` is the driver's fork server on the host: see spawner.c.
 * `aleph-sandbox-init --direct …` does the same steps on the host itself, without namespaces: see direct.c.
 * `aleph-sandbox-init --enter-cgroup DIR -- PROGRAM…` runs on the host too: it moves itself into the
 * cgroup DIR (writing to DIR/cgroup.procs) and execs PROGRAM, so nothing PROGRAM starts escapes it.
 *
 * Setup failures exit 125 with a line starting "aleph-sandbox-init:" on stderr. A program that cannot be
 * executed exits 127 (not found) or 126, as a shell would.
 * `aleph-sandbox-init --probe` prints what this kernel does, found by doing it, as one JSON line (probe.c).
 */
#include "common/common.h"

#include <linux/capability.h>

void die(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("aleph-sandbox-init: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  exit(125);
}

long parse_long(const char *s, const char *what) {
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
  o->env_fd = -1;
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
    else if (strcmp(a, "--env-fd") == 0) o->env_fd = (int)parse_long(v, "fd");
    else if (strcmp(a, "--chdir") == 0) o->chdir = v;
    else if (mount_op_parse(a, argv, argc, &i)) continue;
    else die("unknown option %s", a);
    i++;
  }
  if (i >= argc) die("no program given after --");
  o->argv = &argv[i];
}

static void drop_identity(const struct options *o) {
  if (o->uid < 0) return;
  /* Empty the bounding set (needs CAP_SETPCAP, kept by bwrap for this) and the ambient set. bwrap as root
   * leaves the bounding set full, so every capability is dropped, up to the kernel's last one (EINVAL). */
  for (int cap = 0; cap <= 63; cap++) {
    if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) == 0) continue;
    if (errno == EINVAL) break;
    if (errno != EPERM) die("PR_CAPBSET_DROP: %s", strerror(errno));
  }
  prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
  if (setgroups(0, NULL) < 0) die("setgroups: %s", strerror(errno));
  if (setresgid((gid_t)o->gid, (gid_t)o->gid, (gid_t)o->gid) < 0) die("setresgid(%ld): %s", o->gid, strerror(errno));
  if (setresuid((uid_t)o->uid, (uid_t)o->uid, (uid_t)o->uid) < 0) die("setresuid(%ld): %s", o->uid, strerror(errno));
  /* A uid change from 0 clears the permitted and effective sets, not the inheritable one bwrap filled
   * with what it kept: empty it too, and make sure nothing came back. */
  struct __user_cap_header_struct head = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
  struct __user_cap_data_struct none[2];
  memset(none, 0, sizeof none);
  if (syscall(SYS_capset, &head, none) < 0) die("capset: %s", strerror(errno));
  if (setresuid(0, 0, 0) == 0) die("could still regain uid 0 after dropping identity");
}

static void apply_rlimits(const struct options *o) {
  for (int i = 0; i < o->nrlimits; i++) {
    struct rlimit r = {o->rlimits[i].soft, o->rlimits[i].hard};
    if (setrlimit(o->rlimits[i].resource, &r) < 0) die("setrlimit(%d): %s", o->rlimits[i].resource, strerror(errno));
  }
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

/* Reads NUL-separated NAME=VALUE entries (at most 1 MiB) into an environment array. */
static char **read_env(int fd) {
  size_t cap = 16384, len = 0;
  char *buf = malloc(cap + 1);
  if (buf == NULL) die("out of memory");
  for (;;) {
    if (len == cap) {
      cap *= 2;
      if (cap > (1 << 20)) die("the environment is larger than 1 MiB");
      buf = realloc(buf, cap + 1);
      if (buf == NULL) die("out of memory");
    }
    ssize_t r = read(fd, buf + len, cap - len);
    if (r < 0) {
      if (errno == EINTR) continue;
      die("read environment: %s", strerror(errno));
    }
    if (r == 0) break;
    len += (size_t)r;
  }
  close(fd);
  buf[len] = '\0';
  size_t n = 0;
  for (size_t k = 0; k < len; k++) n += buf[k] == '\0';
  char **env = calloc(n + 2, sizeof *env);
  if (env == NULL) die("out of memory");
  size_t j = 0;
  for (size_t k = 0; k < len; k += strlen(buf + k) + 1) {
    if (strchr(buf + k, '=') == NULL) die("environment entry without '=': %.40s", buf + k);
    env[j++] = buf + k;
  }
  env[j] = NULL;
  return env;
}

static void close_extra_fds(int keep) {
  if (keep >= 3) {
    if (keep > 3 && syscall(SYS_close_range, 3, keep - 1, 0) < 0 && errno != ENOSYS) die("close_range: %s", strerror(errno));
    if (syscall(SYS_close_range, keep + 1, ~0U, 0) < 0 && errno != ENOSYS) die("close_range: %s", strerror(errno));
  } else if (syscall(SYS_close_range, 3, ~0U, 0) < 0 && errno != ENOSYS) {
    die("close_range: %s", strerror(errno));
  }
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
  if (argc >= 2 && strcmp(argv[1], "--launch") == 0) return launch_main(argc, argv);
  if (argc >= 2 && strcmp(argv[1], "--spawner") == 0) return spawner_main(argc, argv);
  if (argc == 2 && strcmp(argv[1], "--version") == 0) {
    printf("aleph-sandbox-init %s\n", ALEPH_HELPER_VERSION);
    return 0;
  }
  if (argc == 2 && strcmp(argv[1], "--probe") == 0) return probe_main();
  if (argc >= 2 && strcmp(argv[1], "--enter-cgroup") == 0) return enter_cgroup(argc, argv);
  if (argc >= 2 && strcmp(argv[1], "--direct") == 0) {
    direct_mode = 1;
    argv[1] = argv[0];
    argv++;
    argc--;
  }
  struct options o;
  parse_args(argc, argv, &o);

  if (direct_mode) {
    if (mount_ops_count() > 0) die("--direct makes no mounts");
    if (strcmp(o.landlock_mode, "off") == 0) die("--direct needs Landlock (--landlock required)");
    o.landlock_mode = "required";
    if (setsid() < 0 && getpgrp() != getpid()) die("setsid: %s", strerror(errno));
  }
  mount_ops_apply();
  char **env = o.env_fd >= 0 ? read_env(o.env_fd) : NULL;
  if (direct_mode && o.uid < 0) direct_drop_capabilities();
  else drop_identity(&o);
  if (o.chdir != NULL && chdir(o.chdir) < 0) die("cannot change to the directory %s: %s", o.chdir, strerror(errno));
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
  if (env != NULL) environ = env;
  execvp(o.argv[0], o.argv);
  int e = errno;
  fprintf(stderr, "aleph-sandbox-init: cannot execute %s: %s\n", o.argv[0], strerror(e));
  return e == ENOENT ? 127 : 126;
}
