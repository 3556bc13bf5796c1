/* Shared declarations of the aleph-sandbox-init sources. */
#ifndef ALEPH_COMMON_H
#define ALEPH_COMMON_H
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
#include <linux/openat2.h>
#include <time.h>
#include <unistd.h>

#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#define SYS_landlock_add_rule 445
#define SYS_landlock_restrict_self 446
extern char **environ;

#endif
#ifndef SYS_close_range
#define SYS_close_range 436
extern char **environ;

#endif
#ifndef PR_CAP_AMBIENT
#define PR_CAP_AMBIENT 47
#define PR_CAP_AMBIENT_CLEAR_ALL 4
extern char **environ;

#endif

#define MAX_ITEMS 1024

struct path_rule {
  const char *path;
  char kind; /* 'r' read+exec, 'w' read+write+exec, 'd' device directory, 'l' list directories only */
};

struct mount_op;
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
  int env_fd;
  const char *chdir; /* after the mounts and the identity drop */
  char **argv;
};

/* An O_PATH descriptor of PATH (beneath DIRFD) resolved under RESOLVE flags, never following a last
 * symlink either: the one way this helper opens a path a command could have changed. */
static inline int open_path(int dirfd, const char *path, uint64_t resolve) {
  struct open_how how = {.flags = O_PATH | O_CLOEXEC | O_NOFOLLOW, .resolve = resolve};
  return (int)syscall(SYS_openat2, dirfd, path, &how, sizeof how);
}

/* Prints "aleph-sandbox-init: …" and exits 125. */
void die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
long parse_long(const char *s, const char *what);

/* landlock.c */
int landlock_abi(void);
int apply_landlock(const struct options *o);
/* In a child of its own: enforces a ruleset that refuses directory reads and checks / cannot be listed.
 * "ok", or what failed (in BUF). */
const char *landlock_exercise(char *buf, size_t len);

/* probe.c: `--probe`. */
int probe_main(void);

/* bridge.c */
int bridge_listen(long port);
void start_bridge(const struct options *o, int lfd);

/* launch.c: the host side (`--launch`). */
int launch_main(int argc, char **argv);

/* nschild.c: a child in new namespaces FLAGS (sharing this process's memory, on STACK of SIZE bytes) that
 * runs SETUP (may be NULL) there and holds them until ns_child_release(); its pid, or -1 with errno (EPROTO:
 * SETUP failed; the child is reaped). The caller reaps it after the release. */
struct ns_child {
  pid_t pid;
  int release;
};
pid_t ns_child_start(struct ns_child *c, int flags, int (*setup)(void), char *stack, size_t size);
void ns_child_release(struct ns_child *c);

/* idmap.c: for the launcher's idmapped mounts, a user namespace mapping OWNER (GROUP) to TO, kept per
 * owner for the run; the children holding them are reaped by idmap_reap() after the run. */
int idmap_userns(uid_t owner, gid_t group, long to);
void idmap_reap(void);

/* The fork server put this launcher in a network namespace it made ahead (netpool.c). */
extern int launch_joined_net;

/* spawner.c: the driver's fork server (`--spawner`). */
int spawner_main(int argc, char **argv);

/* netpool.c: the fork server's network namespaces (loopback up), one per session, lent to one run at a
 * time, and one fresh namespace waiting for the next session. */
#define NETPOOL_KEY_MAX 80
void netpool_init(void);
int netpool_wants_fill(void);
void netpool_fill(void);                 /* while idle: make the waiting fresh namespace */
int netpool_lend(const char *key);       /* a namespace for a run of session KEY, or -1 */
void netpool_return(int fd);             /* the run is over (-1: nothing was lent) */
void netpool_close_in_child(int keep);   /* a forked run keeps none of the pool's descriptors but KEEP */

/* stubs.c: the launcher's records of the stubs it made below a writable root. */
#define MAX_RECORDED 512
struct recorded {
  char kind; /* d: directory, f: empty file, c: a file holding "." */
  unsigned long long dev, ino;
  char rel[1024];
};
/* Reads a root's stub record ("KIND DEV INO REL" lines, oldest first) into ITEMS; returns how many. */
int read_record(int record, struct recorded *items, int max);
/* Removes (or parks under STATE_FD) the stubs RECORD lists below ROOT that are still the empty stubs
 * made, and empties RECORD. */
void remove_recorded(int state_fd, int root, int record);

/* sweep.c: control files of repositories a command created or changed, renamed aside after the run. */
struct sweep_skip {
  dev_t dev;
  ino_t ino;
};
struct sweep_root {
  int fd;           /* the writable root (O_PATH is enough) */
  const char *name; /* its path, for the report */
  dev_t top_dev;    /* its own .git when that existed at the start (0: none) */
  ino_t top_ino;
  const struct sweep_skip *skip;
  int nskip;
};
void git_sweep(const struct sweep_root *roots, int nroots, const struct timespec *start, FILE *report);
/* Renames NAME (beneath DIRFD) to NAME.aleph-quarantined[-N] and reports `quarantined PATH`; where no
 * such name can be had, removes it (`removed PATH`). 0 when it is gone from NAME, else `failed PATH: …`. */
int set_aside(int dirfd, const char *name, FILE *report, const char *path);
/* Removes NAME beneath DIRFD and everything below it, on descriptors; 0 when it is gone. */
int remove_entry(int dirfd, const char *name, int depth);
/* Writes `KIND PATH[: WHY]` to REPORT (if any), a newline in PATH shown as '?'. */
void report_line(FILE *report, const char *kind, const char *path, const char *why);

/* guard.c: tier 3's protected paths, snapshotted before the run and checked after it (`--guard`). */
struct guard;
struct guard *guard_new(int rootfd, const char *root, dev_t dev, ino_t ino);
void guard_path(struct guard *g, const char *rel);
/* Under the root's lock. FRESH: no other run uses the root (a snapshot left now is a killed run's). */
void guard_prepare(struct guard *g, int state_fd, int fresh, FILE *report);
void guard_check(struct guard *g, FILE *report);
/* The last run using the root: its snapshot goes, files and all (they are under STATE_FD). */
void guard_discard(struct guard *g, int state_fd);

/* park.c: stubs kept for the next run under --state (renamed, not recreated). 0 on success. */
int park_take(int state_fd, int parent_fd, const struct stat *parent, const char *base, char kind);
int park_return(int state_fd, int dirfd, const char *base, char kind, const struct stat *st);

/* mounts.c: user-path mounts made inside the sandbox from descriptors. */
int mount_op_parse(const char *op, char **argv, int argc, int *i);
void mount_ops_apply(void);
int mount_ops_count(void);
/* Attaches the detached mount SRC on DEST_FD (DEST names it in messages). */
void attach(int src, int dest_fd, const char *dest);
/* A detached tmpfs of MODE and SIZE with mount attributes ATTRS. */
int make_tmpfs(const char *mode, const char *size, unsigned attrs);

/* devfs.c: on the directory DEST_FD (at DEST), the sandbox's /dev. */
void make_dev(int dest_fd, const char *dest);

/* direct.c: tier 3, no namespaces (`--direct`), and the launcher's `--reap`. */
extern int direct_mode;
void direct_drop_capabilities(void);
void reap_prepare(void);
void reap_descendants(void);

extern char **environ;

#endif
