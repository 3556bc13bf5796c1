/*
 * `aleph-sandbox-init --probe`: what this kernel does, found by doing it, as one JSON line:
 *   {"landlock_abi":N,"landlock":"ok","seccomp":true,"seccomp_detail":"ok","userns":"ok","mknod":"ok",
 *    "pid_max_ns":"ok","userns_limits":"ok","journal":"ok","changes":"ok","watch":"ok",
 *    "uid":U}
 * Each mechanism is exercised in a child process of its own, so this one stays as it was:
 *   seccomp: a filter that makes getppid fail with ENOTRECOVERABLE is loaded, and getppid must fail so;
 *   landlock: the ABI the kernel reports (landlock_abi), and a ruleset refusing directory reads is enforced:
 *     listing / must then fail with EACCES (helper/landlock.c);
 *   userns: a user namespace is made, this uid mapped in it, and a mount namespace made inside it — what
 *     bubblewrap does without privilege, and what AppArmor's restriction of unprivileged user namespaces
 *     (Ubuntu 24.04 and later) refuses;
 *   mknod: /dev/null's device made in a temporary directory — what the helper does for a root host's /dev
 *     (helper/devfs.c), which a runtime dropping CAP_MKNOD or a device policy refuses;
 *   pid_max_ns, userns_limits: the limits tier 2's helper sets in namespaces of the sandbox's own
 *     (ns-limits.c).
 *   journal: a fanotify group with an unlimited queue marking the filesystem of a temporary directory —
 *     the launcher's change journal for the check after the run (after-run/journal.c), which needs
 *     CAP_SYS_ADMIN in the initial user namespace.
 *   changes: the change recording's trapping filter with a user-notification listener, and a trapped call
 *     of a child answered and let go on (../changes/notify.c);
 *   watch: a fanotify group with a bounded queue and an inode mark on a directory, what an unprivileged
 *     host's change watcher keeps between runs instead of the journal (../watcher/watch-tree.c).
 * Each says "ok" or the step that failed and its error; "seccomp" is true only when the filter acted.
 */
#define _GNU_SOURCE
#include "probe.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fanotify.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../changes/notify.h"
#include "../helper/landlock.h"
#include "ns-limits.h"

/* Runs FN in a child and returns what it wrote ("ok" or a failure) in BUF. */
static const char *in_child(const char *(*fn)(char *, size_t), char *buf, size_t len) {
  int p[2];
  if (pipe2(p, O_CLOEXEC) < 0) return snprintf(buf, len, "pipe: %s", strerror(errno)), buf;
  pid_t c = fork();
  if (c < 0) return snprintf(buf, len, "fork: %s", strerror(errno)), buf;
  if (c == 0) {
    close(p[0]);
    char mine[256];
    const char *said = fn(mine, sizeof mine);
    ssize_t w = write(p[1], said, strlen(said));
    _exit(w < 0);
  }
  close(p[1]);
  ssize_t n = 0, r;
  while ((size_t)n < len - 1 && (r = read(p[0], buf + n, len - 1 - (size_t)n)) > 0) n += r;
  close(p[0]);
  int status = 0;
  waitpid(c, &status, 0);
  buf[n] = '\0';
  if (n == 0) snprintf(buf, len, "the probe process ended with %s %d and said nothing",
                       WIFSIGNALED(status) ? "signal" : "status", WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
  for (char *c2 = buf; *c2; c2++)
    if (*c2 == '"' || *c2 == '\\' || (unsigned char)*c2 < 0x20) *c2 = '\''; /* stays one JSON string */
  return buf;
}

static const char *seccomp_exercise(char *buf, size_t len) {
  struct sock_filter f[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_getppid, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (ENOTRECOVERABLE & SECCOMP_RET_DATA)),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  struct sock_fprog prog = {.len = sizeof f / sizeof f[0], .filter = f};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) return snprintf(buf, len, "no_new_privs: %s", strerror(errno)), buf;
  if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) < 0)
    return snprintf(buf, len, "loading a filter: %s", strerror(errno)), buf;
  errno = 0;
  if (syscall(SYS_getppid) != -1 || errno != ENOTRECOVERABLE)
    return snprintf(buf, len, "a filter was loaded, yet the syscall it refuses ran"), buf;
  return "ok";
}

static int write_file(const char *path, const char *text) {
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  int ok = write(fd, text, strlen(text)) == (ssize_t)strlen(text);
  close(fd);
  return ok ? 0 : -1;
}

static const char *userns_exercise(char *buf, size_t len) {
  uid_t uid = getuid();
  gid_t gid = getgid();
  if (unshare(CLONE_NEWUSER) < 0) return snprintf(buf, len, "creating a user namespace: %s", strerror(errno)), buf;
  char map[64];
  if (write_file("/proc/self/setgroups", "deny") < 0 && errno != ENOENT)
    return snprintf(buf, len, "writing setgroups in it: %s", strerror(errno)), buf;
  snprintf(map, sizeof map, "0 %u 1", (unsigned)uid);
  if (write_file("/proc/self/uid_map", map) < 0) return snprintf(buf, len, "writing its uid_map: %s", strerror(errno)), buf;
  snprintf(map, sizeof map, "0 %u 1", (unsigned)gid);
  if (write_file("/proc/self/gid_map", map) < 0) return snprintf(buf, len, "writing its gid_map: %s", strerror(errno)), buf;
  if (unshare(CLONE_NEWNS) < 0)
    return snprintf(buf, len, "making a mount namespace inside it (its capabilities): %s", strerror(errno)), buf;
  return "ok";
}

static const char *mknod_exercise(char *buf, size_t len) {
  char dir[] = "/tmp/aleph-probe-XXXXXX";
  if (mkdtemp(dir) == NULL) return snprintf(buf, len, "no temporary directory to try in: %s", strerror(errno)), buf;
  char node[64];
  snprintf(node, sizeof node, "%s/null", dir);
  int made = mknod(node, S_IFCHR | 0600, makedev(1, 3));
  int e = errno;
  if (made == 0) unlink(node);
  rmdir(dir);
  if (made < 0) return snprintf(buf, len, "making a device node: %s", strerror(e)), buf;
  return "ok";
}

static const char *journal_exercise(char *buf, size_t len) {
  int g = fanotify_init(FAN_CLASS_NOTIF | FAN_REPORT_DFID_NAME_TARGET | FAN_UNLIMITED_QUEUE | FAN_NONBLOCK, O_RDONLY);
  if (g < 0) return snprintf(buf, len, "making a fanotify group with an unlimited queue: %s", strerror(errno)), buf;
  int d = open("/tmp", O_RDONLY | O_DIRECTORY);
  int marked = d >= 0 ? fanotify_mark(g, FAN_MARK_ADD | FAN_MARK_FILESYSTEM, FAN_CREATE | FAN_ONDIR, d, ".") : -1;
  int e = errno;
  close(g);
  if (d >= 0) close(d);
  if (marked < 0) return snprintf(buf, len, "marking the filesystem of /tmp: %s", strerror(e)), buf;
  return "ok";
}

/* The change watcher's group (watcher/watch-tree.c): no unlimited queue, inode marks only (a user may). */
static const char *watch_exercise(char *buf, size_t len) {
  int g = fanotify_init(FAN_CLASS_NOTIF | FAN_REPORT_DFID_NAME_TARGET | FAN_NONBLOCK, O_RDONLY);
  if (g < 0) return snprintf(buf, len, "making a fanotify group: %s", strerror(errno)), buf;
  int d = open("/tmp", O_RDONLY | O_DIRECTORY);
  int marked = d >= 0 ? fanotify_mark(g, FAN_MARK_ADD, FAN_CREATE | FAN_ONDIR | FAN_EVENT_ON_CHILD, d, NULL) : -1;
  int e = errno;
  close(g);
  if (d >= 0) close(d);
  if (marked < 0) return snprintf(buf, len, "marking /tmp: %s", strerror(e)), buf;
  return "ok";
}

int probe_main(void) {
  char ll[256], sc[256], un[256], mk[256], pm[256], ul[256], jn[256], ch[256], wa[256];
  int abi = landlock_abi();
  in_child(landlock_exercise, ll, sizeof ll);
  in_child(seccomp_exercise, sc, sizeof sc);
  in_child(userns_exercise, un, sizeof un);
  in_child(mknod_exercise, mk, sizeof mk);
  in_child(pid_max_exercise, pm, sizeof pm);
  in_child(userns_limits_exercise, ul, sizeof ul);
  in_child(journal_exercise, jn, sizeof jn);
  in_child(changes_probe, ch, sizeof ch);
  in_child(watch_exercise, wa, sizeof wa);
  printf("{\"landlock_abi\":%d,\"landlock\":\"%s\",\"seccomp\":%s,\"seccomp_detail\":\"%s\",\"userns\":\"%s\",\"mknod\":\"%s\","
         "\"pid_max_ns\":\"%s\",\"userns_limits\":\"%s\",\"journal\":\"%s\",\"changes\":\"%s\",\"watch\":\"%s\",\"uid\":%d}\n",
         abi, ll, strcmp(sc, "ok") == 0 ? "true" : "false", sc, un, mk, pm, ul, jn, ch, wa, (int)getuid());
  return 0;
}
