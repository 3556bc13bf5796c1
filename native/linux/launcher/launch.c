/*
 * The host side of a run: `aleph-sandbox-init --launch OPTIONS -- PROGRAM ARGS…` (PROGRAM is bwrap).
 *
 * The driver starts it with a fixed environment. It:
 *   1. opens every user path it is given (--open, --open-in) as an O_PATH descriptor without following
 *      symlinks (openat2 RESOLVE_NO_SYMLINKS, and RESOLVE_BENEATH below a parent), so what is mounted
 *      later is exactly what was opened here, whatever a sandboxed command swaps meanwhile;
 *   2. creates missing protected paths as stubs (mkdirat/openat on the parent's descriptor, or a parked
 *      stub renamed back: park.c), records them under --state, and removes (parks) them when the last run
 *      using that writable root ends (or, after a killed run, when the next one starts);
 *   3. picks the run's own uid from --uid-range (one lock file per uid under --state, held for the run),
 *      or takes the fixed --uid;
 *   4. on a root host (--clone), replaces each descriptor with a detached mount of it (open_tree), made
 *      read-only where asked and idmapped so the directory's owner appears as the run's uid;
 *   5. replaces the arguments @NAME (a descriptor's number), @UID and @GID in PROGRAM's arguments;
 *   6. runs PROGRAM with a fixed environment, waits for it, cleans up and exits as PROGRAM did. SIGTERM,
 *      SIGINT, SIGHUP and the death of its own parent kill PROGRAM first, so the cleanup still runs.
 * --net-pool KEY: where the fork server put this process in a network namespace of its pool (netpool.c),
 * PROGRAM's first `--unshare-net` is dropped, so PROGRAM runs in that one instead of making its own.
 * After PROGRAM: --reap kills what it left behind (tier 3), --git-sweep sets aside the control files of
 * repositories it created or changed (sweep.c), and --guard ROOT REL (tier 3, no read-only mounts) puts
 * back the protected paths it changed, from a snapshot taken before it (guard.c).
 */
#include "../common/common.h"

#include <linux/mount.h>
#include <linux/openat2.h>
#include <sched.h>
#include <sys/file.h>


#define MAX_NODES 128

struct node {
  const char *name;
  const char *path; /* for --open nodes */
  int fd;
  int parent; /* index of the node this one was opened beneath, or -1 */
  int root;   /* index of the top node (a writable root or grant) */
  char rel[1024]; /* path below the root, for the stub record */
  struct stat st;
};

struct root_lock {
  int node;
  int dirfd; /* the root, opened before any clone replaces its descriptor */
  int mutex, users, record;
  int fresh; /* no other run used the root when this one started */
  char prefix[64]; /* its files under --state: PREFIX.mutex, .users, .list */
  struct guard *guard;
};

static struct node nodes[MAX_NODES];
static struct sweep_root sweeps[MAX_NODES];
static int nsweeps;
static const char *report_path;
static int nnodes;
static struct root_lock locks[MAX_NODES];
static int nlocks;
static int state_fd = -1;
static volatile sig_atomic_t child_pid;
int launch_joined_net;

static int find_node(const char *name) {
  for (int i = 0; i < nnodes; i++)
    if (strcmp(nodes[i].name, name) == 0) return i;
  die("launch: no descriptor named %s", name);
}

static const char *why(int e) {
  if (e == ELOOP) return "it or a directory above it is a symlink, which could be swapped";
  if (e == EXDEV) return "it leads outside its parent";
  return strerror(e);
}

static int open_at_state(const char *name, int flags) {
  int fd = openat(state_fd, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC | flags, 0600);
  if (fd < 0) die("launch: cannot open state file %s: %s", name, strerror(errno));
  return fd;
}

/* ── Stub records (stubs.c): one per writable root, guarded by two locks (see the file comment). ── */

static struct root_lock *lock_root(int root_node) {
  for (int i = 0; i < nlocks; i++)
    if (locks[i].node == root_node) return &locks[i];
  if (state_fd < 0) return NULL;
  char name[96];
  struct root_lock *l = &locks[nlocks++];
  l->node = root_node;
  l->dirfd = fcntl(nodes[root_node].fd, F_DUPFD_CLOEXEC, 0);
  if (l->dirfd < 0) die("launch: dup: %s", strerror(errno));
  const struct stat *st = &nodes[root_node].st;
  snprintf(l->prefix, sizeof l->prefix, "stubs-%llx-%llx", (unsigned long long)st->st_dev, (unsigned long long)st->st_ino);
  /* The last run using a root removes its three files (release_roots): a mutex locked meanwhile is used
   * only while it is still the file of that name, or taken again. */
  for (;;) {
    snprintf(name, sizeof name, "%s.mutex", l->prefix);
    l->mutex = open_at_state(name, 0);
    if (flock(l->mutex, LOCK_EX) < 0) die("launch: flock: %s", strerror(errno));
    struct stat held, named;
    if (fstat(l->mutex, &held) == 0 && fstatat(state_fd, name, &named, AT_SYMLINK_NOFOLLOW) == 0 &&
        held.st_dev == named.st_dev && held.st_ino == named.st_ino)
      break;
    close(l->mutex);
  }
  snprintf(name, sizeof name, "%s.users", l->prefix);
  l->users = open_at_state(name, 0);
  snprintf(name, sizeof name, "%s.list", l->prefix);
  l->record = open_at_state(name, O_APPEND);
  if (flock(l->users, LOCK_EX | LOCK_NB) == 0) {
    /* Nobody else uses this root: what the record lists was left by a run that was killed. */
    remove_recorded(state_fd, l->dirfd, l->record);
    l->fresh = 1;
  }
  if (flock(l->users, LOCK_SH) < 0) die("launch: flock: %s", strerror(errno));
  return l; /* the mutex stays held until every path below this root is open */
}

static void unlock_roots_mutex(void) {
  for (int i = 0; i < nlocks; i++) flock(locks[i].mutex, LOCK_UN);
}

static void release_roots(FILE *report) {
  for (int i = 0; i < nlocks; i++) {
    struct root_lock *l = &locks[i];
    flock(l->mutex, LOCK_EX);
    if (l->guard != NULL) guard_check(l->guard, report);
    if (flock(l->users, LOCK_EX | LOCK_NB) == 0) {
      remove_recorded(state_fd, l->dirfd, l->record);
      char name[96];
      if (l->guard != NULL) guard_discard(l->guard, state_fd);
      /* No other run uses the root and its record is empty: its files go (a run waiting on the mutex
       * sees it is no longer the file of that name and makes new ones). */
      const char *suffix[] = {".list", ".users", ".mutex"};
      for (int k = 0; k < 3; k++) {
        snprintf(name, sizeof name, "%s%s", l->prefix, suffix[k]);
        unlinkat(state_fd, name, 0);
      }
    }
    flock(l->users, LOCK_UN);
    flock(l->mutex, LOCK_UN);
  }
}

/* ── Opening. ── */

static void open_root(const char *name, const char *path) {
  if (nnodes >= MAX_NODES) die("launch: too many paths");
  if (path[0] != '/') die("launch: %s is not absolute", path);
  struct node *n = &nodes[nnodes];
  n->name = name;
  n->path = path;
  n->parent = -1;
  n->root = nnodes;
  n->rel[0] = '\0';
  n->fd = open_path(AT_FDCWD, path, RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
  if (n->fd < 0) die("launch: cannot open %s: %s", path, why(errno));
  if (fstat(n->fd, &n->st) < 0) die("launch: fstat %s: %s", path, strerror(errno));
  nnodes++;
}

static void open_below(const char *name, const char *parent_name, const char *rel, const char *kind) {
  if (nnodes >= MAX_NODES) die("launch: too many paths");
  if (strchr(rel, '/') != NULL || strcmp(rel, "..") == 0 || strcmp(rel, ".") == 0 || rel[0] == '\0')
    die("launch: %s is not a single path component", rel);
  int p = find_node(parent_name);
  struct node *n = &nodes[nnodes];
  n->name = name;
  n->parent = p;
  n->root = nodes[p].root;
  char above[sizeof n->rel];
  memcpy(above, nodes[p].rel, sizeof above);
  if (snprintf(n->rel, sizeof n->rel, "%s%s%s", above, above[0] ? "/" : "", rel) >= (int)sizeof n->rel)
    die("launch: path too long below %s", parent_name);
  struct root_lock *l = lock_root(n->root);
  uint64_t resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  n->fd = open_path(nodes[p].fd, rel, resolve);
  int dot = strcmp(kind, "dot") == 0;
  if (n->fd < 0 && errno == ENOENT && (strcmp(kind, "dir") == 0 || strcmp(kind, "file") == 0 || dot)) {
    /* A missing protected path: create an empty stub so it can be mounted read-only. A "dot" stub is a
     * file holding ".", for files git reads as a path (commondir: "." is the repository itself). */
    int made;
    if (park_take(state_fd, nodes[p].fd, &nodes[p].st, rel, dot ? 'c' : kind[0]) == 0) made = 0;
    else if (kind[0] == 'd' && !dot) made = mkdirat(nodes[p].fd, rel, 0755);
    else {
      made = openat(nodes[p].fd, rel, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
      if (made >= 0 && dot && write(made, ".\n", 2) != 2) die("launch: writing the stub %s: %s", n->rel, strerror(errno));
      if (made >= 0) made = close(made);
    }
    if (made < 0 && errno != EEXIST) die("launch: cannot create the stub %s: %s", n->rel, strerror(errno));
    n->fd = open_path(nodes[p].fd, rel, resolve);
    if (made == 0 && n->fd >= 0) {
      if (fstat(n->fd, &n->st) < 0) die("launch: fstat %s: %s", n->rel, strerror(errno));
      const struct stat *st = &n->st;
      if (geteuid() == 0 && (st->st_uid != nodes[p].st.st_uid || st->st_gid != nodes[p].st.st_gid)) {
        if (fchownat(n->fd, "", nodes[p].st.st_uid, nodes[p].st.st_gid, AT_EMPTY_PATH) == 0) {
          n->st.st_uid = nodes[p].st.st_uid;
          n->st.st_gid = nodes[p].st.st_gid;
        }
      }
      if (l == NULL) die("launch: a stub needs --state");
      char line[1100];
      int len = snprintf(line, sizeof line, "%c %llx %llx %s\n", dot ? 'c' : kind[0], (unsigned long long)st->st_dev,
                         (unsigned long long)st->st_ino, n->rel);
      if (len >= (int)sizeof line || write(l->record, line, (size_t)len) != len)
        die("launch: cannot record the stub %s: %s", n->rel, strerror(errno));
      nnodes++;
      return;
    }
  }
  if (n->fd < 0) die("launch: cannot open the protected path %s: %s", n->rel, why(errno));
  if (fstat(n->fd, &n->st) < 0) die("launch: fstat %s: %s", n->rel, strerror(errno));
  nnodes++;
}

/* ── Identity: a uid of the range nobody else holds. ── */

static long pick_uid(long lo, long hi) {
  if (state_fd < 0) die("launch: --uid-range needs --state");
  if (lo < 1 || hi < lo) die("launch: bad uid range %ld-%ld", lo, hi);
  long span = hi - lo + 1;
  for (long k = 0; k < span; k++) {
    long uid = lo + (getpid() + k) % span;
    char name[48];
    snprintf(name, sizeof name, "uid-%ld.lock", uid);
    int fd = open_at_state(name, 0);
    if (flock(fd, LOCK_EX | LOCK_NB) == 0) return uid; /* the descriptor stays open (and locked) */
    close(fd);
  }
  die("launch: every uid of %ld-%ld is in use by a running command; widen the sandbox uid range", lo, hi);
}

static void clone_node(const char *name, const char *mode, long uid) {
  struct node *n = &nodes[find_node(name)];
  int m = (int)syscall(SYS_open_tree, n->fd, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH);
  if (m < 0) die("launch: cannot clone the mount of %s: %s", name, strerror(errno));
  struct mount_attr attr = {.attr_set = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV};
  if (strcmp(mode, "ro") == 0) attr.attr_set |= MOUNT_ATTR_RDONLY;
  int ns = -1;
  if (uid >= 0) {
    ns = idmap_userns(n->st.st_uid, n->st.st_gid, uid);
    attr.attr_set |= MOUNT_ATTR_IDMAP;
    attr.userns_fd = (uint64_t)ns;
  }
  if (syscall(SYS_mount_setattr, m, "", AT_EMPTY_PATH, &attr, sizeof attr) < 0) {
    const char *where = n->path != NULL ? n->path : n->rel[0] ? n->rel : name;
    die("launch: cannot make an idmapped mount of %s: %s (the kernel (before 5.12) or this filesystem does "
        "not support idmapped mounts; options: use a workspace on ext4, xfs, btrfs or tmpfs, run the host "
        "side as a non-root user (commands then run as that user in a user namespace))",
        where, strerror(errno));
  }
  close(n->fd);
  n->fd = m;
}

/* ── Running PROGRAM. ── */

static void on_signal(int sig) {
  (void)sig;
  if (child_pid > 0) kill(child_pid, SIGKILL);
}

int launch_main(int argc, char **argv) {
  pid_t parent = getppid();
  sigset_t stop_signals, old_mask;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGHUP);
  sigprocmask(SIG_BLOCK, &stop_signals, &old_mask);
  /* The driver's death (even SIGKILL) reaches us as SIGTERM, which kills PROGRAM and lets us clean up. */
  prctl(PR_SET_PDEATHSIG, SIGTERM, 0, 0, 0);
  if (getppid() != parent) die("launch: the parent exited");
  long uid = -1;
  int reap = 0, net_pool = 0;
  const char *cgroup = NULL;
  int i = 2;
  for (; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--") == 0) {
      i++;
      break;
    }
    int left = argc - i - 1;
    if (strcmp(a, "--state") == 0 && left >= 1) {
      state_fd = open_path(AT_FDCWD, argv[++i], RESOLVE_NO_SYMLINKS);
      if (state_fd >= 0) {
        close(state_fd);
        state_fd = open(argv[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      }
      if (state_fd < 0) die("launch: cannot open the state directory %s: %s", argv[i], why(errno));
    } else if (strcmp(a, "--uid-range") == 0 && left >= 2) {
      uid = pick_uid(parse_long(argv[i + 1], "uid"), parse_long(argv[i + 2], "uid"));
      i += 2;
    } else if (strcmp(a, "--uid") == 0 && left >= 1) {
      uid = parse_long(argv[++i], "uid");
    } else if (strcmp(a, "--net-pool") == 0 && left >= 1) {
      net_pool = 1; /* its value, the session's key, is for the fork server (netpool.c) */
      i++;
    } else if (strcmp(a, "--reap") == 0) {
      reap = 1; /* tier 3: no PID namespace takes PROGRAM's leftovers down, so this process does */
      reap_prepare();
    } else if (strcmp(a, "--enter-cgroup") == 0 && left >= 1) {
      cgroup = argv[++i];
    } else if (strcmp(a, "--open") == 0 && left >= 2) {
      open_root(argv[i + 1], argv[i + 2]);
      i += 2;
    } else if (strcmp(a, "--open-in") == 0 && left >= 4) {
      open_below(argv[i + 1], argv[i + 2], argv[i + 3], argv[i + 4]);
      i += 4;
    } else if (strcmp(a, "--git-sweep") == 0 && left >= 1) {
      /* Before any --clone: the walk needs the directory itself, not its detached mount. */
      struct node *n = &nodes[find_node(argv[++i])];
      struct sweep_root *r = &sweeps[nsweeps++];
      r->fd = fcntl(n->fd, F_DUPFD_CLOEXEC, 0);
      if (r->fd < 0) die("launch: dup: %s", strerror(errno));
      if (n->path == NULL) die("launch: --git-sweep %s: not a path opened with --open", argv[i]);
      r->name = n->path;
      struct stat st;
      if (fstatat(n->fd, ".git", &st, AT_SYMLINK_NOFOLLOW) == 0) {
        r->top_dev = st.st_dev;
        r->top_ino = st.st_ino;
      }
    } else if (strcmp(a, "--guard") == 0 && left >= 2) {
      int k = find_node(argv[i + 1]);
      if (nodes[k].path == NULL) die("launch: --guard %s: not a path opened with --open", argv[i + 1]);
      struct root_lock *l = lock_root(k);
      if (l == NULL) die("launch: --guard needs --state");
      if (l->guard == NULL) l->guard = guard_new(l->dirfd, nodes[k].path, nodes[k].st.st_dev, nodes[k].st.st_ino);
      guard_path(l->guard, argv[i + 2]);
      i += 2;
    } else if (strcmp(a, "--report") == 0 && left >= 1) {
      report_path = argv[++i];
    } else if (strcmp(a, "--clone") == 0 && left >= 2) {
      clone_node(argv[i + 1], argv[i + 2], uid);
      i += 2;
    } else {
      die("launch: unknown or incomplete option %s", a);
    }
  }
  if (i >= argc) die("launch: no program given after --");
  FILE *report = report_path == NULL ? NULL : report_open(report_path);
  for (int k = 0; k < nlocks; k++)
    if (locks[k].guard != NULL) guard_prepare(locks[k].guard, state_fd, locks[k].fresh, report);
  unlock_roots_mutex();
  char **prog = &argv[i];
  if (net_pool && launch_joined_net) {
    char **p = prog;
    while (*p != NULL && strcmp(*p, "--unshare-net") != 0) p++;
    if (*p == NULL) die("launch: --net-pool, but PROGRAM makes no network namespace of its own");
    for (; *p != NULL; p++) p[0] = p[1];
  }
  char numbers[MAX_NODES][16];
  char uidbuf[24];
  snprintf(uidbuf, sizeof uidbuf, "%ld", uid);
  for (char **p = prog; *p != NULL; p++) {
    if ((*p)[0] != '@') continue;
    if (strcmp(*p, "@UID") == 0 || strcmp(*p, "@GID") == 0) {
      if (uid < 0) die("launch: %s used without --uid-range", *p);
      *p = uidbuf;
      continue;
    }
    char *colon = strchr(*p, ':');
    if (colon != NULL) {
      /* @NAME:v: a second descriptor of NAME, for the helper to check what bwrap mounted from the first
       * (bwrap closes the descriptors it binds). */
      *colon = '\0';
      int k = find_node(*p + 1);
      int d = fcntl(nodes[k].fd, F_DUPFD, 3);
      if (d < 0) die("launch: dup: %s", strerror(errno));
      snprintf(*p, strlen(*p) + 3, "%d", d);
      continue;
    }
    int k = find_node(*p + 1);
    snprintf(numbers[k], sizeof numbers[k], "%d", nodes[k].fd);
    *p = numbers[k];
  }
  /* The descriptors PROGRAM passes on to the helper inside; every other one of ours is close-on-exec. */
  for (int k = 0; k < nnodes; k++) fcntl(nodes[k].fd, F_SETFD, 0);
  if (cgroup != NULL) {
    char path[4096];
    if (snprintf(path, sizeof path, "%s/cgroup.procs", cgroup) >= (int)sizeof path) die("cgroup path too long");
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0 || write(fd, "0\n", 2) != 2) die("joining %s: %s", cgroup, strerror(errno));
    close(fd);
  }

  struct sigaction sa = {.sa_handler = on_signal};
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGHUP, &sa, NULL);
  struct timespec start;
  clock_gettime(CLOCK_REALTIME_COARSE, &start); /* ctimes come from the same coarse clock */
  pid_t c = fork();
  if (c > 0) child_pid = c;
  sigprocmask(SIG_SETMASK, &old_mask, NULL); /* a stop that arrived during set-up kills PROGRAM now */
  if (c < 0) die("launch: fork: %s", strerror(errno));
  if (c == 0) {
    struct sigaction dfl = {.sa_handler = SIG_DFL};
    sigaction(SIGTERM, &dfl, NULL);
    sigaction(SIGINT, &dfl, NULL);
    sigaction(SIGHUP, &dfl, NULL);
    prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    char *env[] = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", NULL};
    execve(prog[0], prog, env);
    fprintf(stderr, "aleph-sandbox-init: cannot execute %s: %s\n", prog[0], strerror(errno));
    _exit(125);
  }
  for (int k = 0; k < nnodes; k++) close(nodes[k].fd);
  int status = 0;
  while (waitpid(c, &status, 0) < 0 && errno == EINTR) {
  }
  idmap_reap();
  if (reap) reap_descendants();
  if (nsweeps > 0) {
    /* Stubs of every run using these roots are mount points elsewhere: the sweep leaves them alone. */
    static struct sweep_skip skip[MAX_RECORDED];
    struct recorded *items = calloc(MAX_RECORDED, sizeof *items);
    int nskip = 0;
    for (int k = 0; items != NULL && k < nlocks && nskip < MAX_RECORDED; k++) {
      int n = read_record(locks[k].record, items, MAX_RECORDED - nskip);
      for (int j = 0; j < n; j++) {
        skip[nskip].dev = (dev_t)items[j].dev;
        skip[nskip++].ino = (ino_t)items[j].ino;
      }
    }
    free(items);
    for (int k = 0; k < nsweeps; k++) {
      sweeps[k].skip = skip;
      sweeps[k].nskip = nskip;
    }
    git_sweep(sweeps, nsweeps, &start, report);
  }
  release_roots(report);
  if (report != NULL) fclose(report);
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  int sig = WTERMSIG(status);
  signal(sig, SIG_DFL);
  kill(getpid(), sig);
  return 128 + sig;
}
