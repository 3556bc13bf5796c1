/*
 * Runs in progress (inflight.h). Each run's record, `inflight-PID-NS` under --state (mode 0600, this uid's,
 * never a symlink), is made and locked (flock LOCK_EX) after the options are read and before PROGRAM
 * starts, and removed only after the checks after the run. Its fields, each ending with a NUL (no path
 * can hold one):
 *   aleph-inflight 1, START_S, START_NS, QUARANTINE (empty: none),
 *   then `root`, DEV, INO, PATH for each root checked whole, and `absent`, ROOT_LEN, SHOWN for each
 *   protected path that was absent (after-run/absent.h).
 * The kernel drops a flock when the last descriptor of it closes, so a record whose lock can be taken
 * belongs to a run that is gone, however it ended (no pid is trusted, so pid reuse cannot fool it); the
 * record is fully written before PROGRAM starts, so one that cannot be read is a run that never started
 * PROGRAM, and goes. `inflight.lock` serialises looking at records, checking for dead runs and making a
 * record: two runs never check the same dead run at once, and none mistakes a record being made for a
 * dead one. A run checks for the dead runs that share one of its own roots (device and inode, or path: the
 * workspace), before it reads its options, so what it opens is what that check left (the driver's
 * preflight, in a directory of its own, leaves them to the command's run, which reports them). A dead run
 * sharing a root with a live run is left for a later run, so its check never races a running command
 * (which would also count that command's changes as the dead run's). A check that cannot finish refuses
 * this run, naming the root and the fix, and keeps the record: every later run there is refused too.
 */
#define _GNU_SOURCE
#include "inflight.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../after-run/absent.h"
#include "../after-run/check.h"
#include "../after-run/quarantine.h"
#include "../common/errors.h"
#include "../common/paths.h"
#include "../common/report.h"
#include "state.h"

#define HEADER "aleph-inflight 1"
#define RECORD_MAX (4 << 20)
#define MAX_RECORDS 256
#define MAX_LIVE_ROOTS 1024
#define MAX_MINE 128

/* A record read whole (BUF, LEN bytes, the last a NUL), its fields read in turn from AT. */
struct rec {
  char name[64];
  char *buf;
  size_t len, at;
};

static int own_fd = -1;
static char own_name[64];
/* This run's writable roots to check (--check-root NAME of --open NAME PATH), read from ARGV before the
 * options are: only dead runs sharing one of them are checked for by this run. */
static struct {
  const char *path;
  dev_t dev;
  ino_t ino;
} mine[MAX_MINE];
static int nmine;
static struct {
  dev_t dev;
  ino_t ino;
} live[MAX_LIVE_ROOTS];
static int nlive;

const char *launch_option(int argc, char **argv, const char *name) {
  for (int i = 2; i + 1 < argc && strcmp(argv[i], "--") != 0; i++)
    if (strcmp(argv[i], name) == 0) return argv[i + 1];
  return NULL;
}

static const char *field(struct rec *r) {
  if (r->at >= r->len) return NULL;
  const char *f = r->buf + r->at;
  r->at += strlen(f) + 1;
  return f;
}

static unsigned long long number(const char *s, int *bad) {
  char *end;
  errno = 0;
  unsigned long long v = s == NULL ? 0 : strtoull(s, &end, 10);
  if (s == NULL || errno != 0 || end == s || *end != '\0') *bad = 1;
  return v;
}

/* The record open on FD read into R (a regular file of this uid that nobody else may read or write,
 * within RECORD_MAX, with its header and a final NUL); -1 when it is not one. */
static int read_record(int fd, struct rec *r) {
  struct stat st;
  if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077) != 0 ||
      st.st_size < 1 || st.st_size > RECORD_MAX)
    return -1;
  r->buf = malloc((size_t)st.st_size);
  if (r->buf == NULL) return -1;
  ssize_t n = pread(fd, r->buf, (size_t)st.st_size, 0);
  r->len = n < 0 ? 0 : (size_t)n;
  r->at = 0;
  const char *h = r->len > 0 && r->buf[r->len - 1] == '\0' ? field(r) : NULL;
  if (h != NULL && strcmp(h, HEADER) == 0) return 0;
  free(r->buf);
  r->buf = NULL;
  return -1;
}

/* Each `root` of R (its fields after the header, start and quarantine): FN(PATH, DEV, INO, CTX), until FN
 * returns nonzero (returned). */
static int each_root(struct rec *r, int (*fn)(const char *, dev_t, ino_t, void *), void *ctx) {
  r->at = 0;
  for (int i = 0; i < 4; i++) field(r);
  for (const char *tag; (tag = field(r)) != NULL;) {
    int root = strcmp(tag, "root") == 0;
    const char *a = field(r), *b = field(r), *path = root ? field(r) : NULL;
    int bad = 0;
    dev_t dev = (dev_t)number(a, &bad);
    ino_t ino = (ino_t)number(b, &bad);
    int rc = path == NULL || bad ? 0 : fn(path, dev, ino, ctx);
    if (rc != 0) return rc;
  }
  return 0;
}

static int note_live(const char *path, dev_t dev, ino_t ino, void *ctx) {
  (void)path, (void)ctx;
  if (nlive < MAX_LIVE_ROOTS) live[nlive].dev = dev, live[nlive++].ino = ino;
  return 0;
}

static int shares_live(const char *path, dev_t dev, ino_t ino, void *ctx) {
  (void)path, (void)ctx;
  for (int i = 0; i < nlive; i++)
    if (live[i].dev == dev && live[i].ino == ino) return 1;
  return 0;
}

/* The record NAME: -1 live (its roots noted), 0 gone (removed meanwhile, or unreadable: removed now), 1 a
 * dead run's, read into R and left open and locked on *FD. */
static int look_at(const char *name, struct rec *r, int *fd) {
  *fd = openat(state_fd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (*fd < 0) return 0;
  int dead = flock(*fd, LOCK_EX | LOCK_NB) == 0;
  struct stat st;
  /* A run that ended removes its record before it unlocks it: unlinked now means gone. */
  if (dead && (fstat(*fd, &st) < 0 || st.st_nlink == 0)) dead = -1;
  int readable = dead >= 0 && read_record(*fd, r) == 0;
  if (!dead && readable) each_root(r, note_live, NULL);
  if (dead == 1 && readable) return 1;
  if (dead == 1) unlinkat(state_fd, name, 0); /* killed before it started PROGRAM */
  free(r->buf);
  close(*fd);
  return dead ? 0 : -1;
}

static int shares_mine(const char *path, dev_t dev, ino_t ino, void *ctx) {
  (void)ctx;
  for (int i = 0; i < nmine; i++)
    if ((mine[i].dev == dev && mine[i].ino == ino) || strcmp(mine[i].path, path) == 0) return 1;
  return 0;
}

/* This run's roots to check, from ARGV (values are never option names: see launch_option). */
static void find_mine(int argc, char **argv) {
  for (int i = 2; i + 1 < argc && strcmp(argv[i], "--") != 0 && nmine < MAX_MINE; i++) {
    if (strcmp(argv[i], "--check-root") != 0) continue;
    for (int j = 2; j + 2 < argc && strcmp(argv[j], "--") != 0; j++)
      if (strcmp(argv[j], "--open") == 0 && strcmp(argv[j + 1], argv[i + 1]) == 0) {
        struct stat st = {0};
        int fd = open_path(AT_FDCWD, argv[j + 2], RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
        if (fd >= 0 && fstat(fd, &st) < 0) st = (struct stat){0};
        if (fd >= 0) close(fd);
        mine[nmine].path = argv[j + 2];
        mine[nmine].dev = st.st_dev;
        mine[nmine++].ino = st.st_ino;
        break;
      }
  }
}

struct sweep {
  FILE *report;
  struct timespec since;
  const char *why;
  const char *root;  /* the root that could not be checked */
  const char *first; /* its first root */
  int failed;       /* a root could not be checked */
};

/* Every root is checked, whether or not one before it could be. */
static int check_one_root(const char *path, dev_t dev, ino_t ino, void *ctx) {
  struct sweep *s = ctx;
  const char *why = NULL;
  (void)dev, (void)ino;
  report_line(s->report, "checked", path, NULL);
  if (s->first == NULL) s->first = path;
  if (check_earlier(state_fd, path, &s->since, s->report, &why) < 0) s->failed = 1, s->why = why, s->root = path;
  return 0;
}

/* The dead run R's check, as its own would have been: its absent protected paths, then its roots walked
 * whole, what changed since its start set aside into its quarantine. 0 when done, else -1 (S->why). */
static int check_record(struct rec *r, struct sweep *s) {
  r->at = 0;
  field(r);
  int bad = 0;
  s->since.tv_sec = (time_t)number(field(r), &bad);
  s->since.tv_nsec = (long)number(field(r), &bad);
  const char *quarantine = field(r);
  if (bad || quarantine == NULL) return 0; /* cannot happen: read_record checked the header */
  quarantine_use(quarantine[0] == '\0' ? NULL : quarantine);
  int failures = report_failures(), rc = 0;
  for (const char *tag; (tag = field(r)) != NULL;) {
    if (strcmp(tag, "root") == 0) {
      field(r), field(r), field(r);
      continue;
    }
    const char *len = field(r), *shown = field(r);
    size_t root_len = (size_t)number(len, &bad);
    if (shown != NULL && !bad && absent_check_shown(shown, root_len, s->report) < 0) {
      s->why = "its protected paths could not be looked at";
      s->root = shown;
      rc = -1;
    }
  }
  each_root(r, check_one_root, s);
  if (s->failed) rc = -1;
  if (rc == 0 && report_failures() > failures) {
    s->why = "what it left could not all be set aside (see quarantineFailed)";
    s->root = s->first;
    rc = -1;
  }
  quarantine_use(NULL);
  return rc;
}

/* The names of the records under --state (at most MAX_RECORDS), into NAMES; their number. */
static int list_records(char names[][64]) {
  int dfd = openat(state_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  DIR *d = dfd < 0 ? NULL : fdopendir(dfd);
  if (d == NULL) die("launch: cannot list the state directory %s: %s", state_path, strerror(errno));
  int n = 0;
  for (struct dirent *e; n < MAX_RECORDS && (e = readdir(d)) != NULL;)
    if (strncmp(e->d_name, "inflight-", 9) == 0 && strlen(e->d_name) < 64) snprintf(names[n++], 64, "%s", e->d_name);
  closedir(d);
  return n;
}

static int lock_records(void) {
  int lock = state_file("inflight.lock", 0);
  while (flock(lock, LOCK_EX) < 0)
    if (errno != EINTR) die("launch: flock inflight.lock: %s", strerror(errno));
  return lock;
}

/* The dead run R could not be checked for (S->why): this run is refused, the record kept. */
static void refuse(struct rec *r, const struct sweep *s) {
  die("launch: %s: an earlier run there ended without its check after the run (killed), and that check "
      "could not finish now: %s; nothing was run. Fix: look through it for what a command may have left for "
      "host tools (git config and hooks in any git directory, .envrc and the like), set it aside, then remove "
      "%s/%s",
      s->root, s->why, state_path, r->name);
}

void inflight_sweep(int argc, char **argv, FILE *report) {
  state_path = launch_option(argc, argv, "--state");
  if (state_path == NULL) return;
  state_open(state_path);
  find_mine(argc, argv);
  int lock = lock_records();
  static char names[MAX_RECORDS][64];
  static struct rec dead[MAX_RECORDS];
  int fds[MAX_RECORDS], ndead = 0, n = list_records(names);
  for (int i = 0; i < n; i++) {
    struct rec r = {0};
    int fd;
    if (look_at(names[i], &r, &fd) != 1) continue;
    memcpy(r.name, names[i], sizeof r.name);
    fds[ndead] = fd;
    dead[ndead++] = r;
  }
  for (int i = 0; i < ndead; i++) {
    struct sweep s = {.report = report};
    /* Left for a run in its roots; or, sharing one with a live run, for later: its check would race a
     * running command. */
    int ours = each_root(&dead[i], shares_mine, NULL) != 0 && each_root(&dead[i], shares_live, NULL) == 0;
    report_prefix("earlier-");
    if (ours && check_record(&dead[i], &s) < 0) refuse(&dead[i], &s);
    report_prefix(NULL);
    if (ours) unlinkat(state_fd, dead[i].name, 0);
    free(dead[i].buf);
    close(fds[i]);
  }
  if (report != NULL) fflush(report);
  close(lock);
}

/* A growing buffer of NUL-ended fields. */
struct out {
  char *buf;
  size_t len, cap;
};

static void put(struct out *o, const char *f) {
  size_t n = strlen(f) + 1;
  if (o->len + n > o->cap) {
    size_t cap = (o->cap == 0 ? 4096 : o->cap * 2) + n;
    char *p = realloc(o->buf, cap);
    if (p == NULL) die("launch: out of memory");
    o->buf = p;
    o->cap = cap;
  }
  memcpy(o->buf + o->len, f, n);
  o->len += n;
}

static void put_number(struct out *o, unsigned long long v) {
  char s[32];
  snprintf(s, sizeof s, "%llu", v);
  put(o, s);
}

static void put_root(const char *path, dev_t dev, ino_t ino, void *ctx) {
  put(ctx, "root");
  put_number(ctx, (unsigned long long)dev);
  put_number(ctx, (unsigned long long)ino);
  put(ctx, path);
}

static void put_absent(const char *shown, size_t root_len, void *ctx) {
  put(ctx, "absent");
  put_number(ctx, root_len);
  put(ctx, shown);
}

/* A new record's descriptor, created under a name no other run uses, and locked. */
static int make_record(void) {
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  for (int tries = 0; tries < 100; tries++) {
    snprintf(own_name, sizeof own_name, "inflight-%ld-%lld%09ld-%d", (long)getpid(), (long long)now.tv_sec,
             now.tv_nsec, tries);
    int fd = openat(state_fd, own_name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0 && errno == EEXIST) continue;
    if (fd < 0) die("launch: cannot make the record of this run in %s: %s", state_path, strerror(errno));
    if (flock(fd, LOCK_EX | LOCK_NB) < 0) die("launch: flock %s: %s", own_name, strerror(errno));
    return fd;
  }
  die("launch: cannot make the record of this run in %s: every name taken", state_path);
}

void inflight_begin(void) {
  if (state_fd < 0) return;
  struct out o = {0};
  struct timespec start;
  /* The clock ctimes use: what the run changes is not older than this. */
  clock_gettime(CLOCK_REALTIME_COARSE, &start);
  put(&o, HEADER);
  put_number(&o, (unsigned long long)start.tv_sec);
  put_number(&o, (unsigned long long)start.tv_nsec);
  put(&o, quarantine_dir() == NULL ? "" : quarantine_dir());
  check_each_root(put_root, &o);
  absent_each(put_absent, &o);
  int lock = lock_records();
  own_fd = make_record();
  ssize_t w = write(own_fd, o.buf, o.len);
  if (w != (ssize_t)o.len) {
    int e = w < 0 ? errno : ENOSPC;
    unlinkat(state_fd, own_name, 0);
    die("launch: cannot write the record of this run in %s: %s", state_path, strerror(e));
  }
  close(lock);
  free(o.buf);
}

void inflight_end(void) {
  if (own_fd < 0) return;
  /* Removed before it is unlocked: a run that takes the lock meanwhile sees it unlinked (look_at). */
  unlinkat(state_fd, own_name, 0);
  close(own_fd);
  own_fd = -1;
}
