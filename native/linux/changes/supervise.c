/* The supervisor thread (supervise.h). */
#define _GNU_SOURCE
#include "supervise.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "../common/errors.h"
#include "moves.h"
#include "refused.h"
#include "resolve.h"
#include "store.h"
#include "syscalls.h"
#include "tallies.h"

#define STOP_GRACE_MS 2000 /* how long processes may take to go once the run is over */
#define TOUCH_OPTIONAL 256 /* a path whose place may be unknown without harm (not passed on to the store) */

static int sock[2] = {-1, -1}; /* ours, PROGRAM's */
static int stop_pipe[2] = {-1, -1};
static pthread_t thread;
static int started;

int supervise_prepare(void) {
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sock) < 0) die("launch: socketpair: %s", strerror(errno));
  if (pipe2(stop_pipe, O_CLOEXEC) < 0) die("launch: pipe: %s", strerror(errno));
  /* PROGRAM's end crosses its exec (bwrap keeps inherited descriptors; the helper gets its number). */
  if (fcntl(sock[1], F_SETFD, 0) < 0) die("launch: fcntl: %s", strerror(errno));
  return sock[1];
}

/* The listener the helper sent, or -1 with the run marked unrecorded. */
static int receive_listener(void) {
  int err = 0, fd = -1;
  char cbuf[CMSG_SPACE(sizeof(int))];
  struct iovec iov = {.iov_base = &err, .iov_len = sizeof err};
  struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof cbuf};
  ssize_t n;
  while ((n = recvmsg(sock[0], &msg, MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR) {
  }
  struct cmsghdr *c = n > 0 ? CMSG_FIRSTHDR(&msg) : NULL;
  if (c != NULL && c->cmsg_type == SCM_RIGHTS) memcpy(&fd, CMSG_DATA(c), sizeof fd);
  if (fd >= 0) return fd;
  char why[160];
  if (n <= 0) snprintf(why, sizeof why, "the sandbox ended before its changes could be recorded");
  else snprintf(why, sizeof why, "seccomp user notification is unavailable here: %s", strerror(err));
  store_unrecorded(why);
  return -1;
}

/* The root holding absolute PATH (*REL: the path below it), or -1. */
static int root_of(const char *path, const char **rel) {
  int best = -1;
  size_t best_len = 0;
  for (int k = 0; k < store_nroots(); k++) {
    const char *r = store_root_path(k);
    size_t n = strlen(r);
    if (n == 1 && r[0] == '/') n = 0;
    if (strncmp(path, r, n) == 0 && (path[n] == '\0' || path[n] == '/') && (best < 0 || n > best_len)) {
      best = k;
      best_len = n;
    }
  }
  if (best >= 0) *rel = path[best_len] == '/' ? path + best_len + 1 : path + best_len;
  return best;
}

/* Touches path argument PATH_ARG (relative to the dirfd argument DIRFD_ARG; -1: none, the descriptor
 * itself) of the trapped call N with HOW. */
static void touch_arg(const struct seccomp_notif *n, int mem, int dirfd_arg, int path_arg, int how, int listener) {
  char raw[4096], abs[4096];
  const char *p = NULL;
  int readable = 1;
  /* utimensat with a null path (futimens) sets the times of its descriptor argument itself. */
  if (path_arg >= 0 && !(n->data.nr == SYS_utimensat && n->data.args[path_arg] == 0)) {
    readable = read_string(mem, n->data.args[path_arg], raw, sizeof raw) == 0;
    p = raw;
  }
  int dirfd = dirfd_arg < 0 ? AT_FDCWD : (int)n->data.args[dirfd_arg];
  int resolved = readable ? sandbox_path(n->pid, dirfd, p, abs, sizeof abs) : -1;
  __u64 id = n->id;
  if (ioctl(listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &id) < 0) return; /* gone: its call will not run */
  /* A path too long to read fails the call too (ENAMETOOLONG); a bad pointer fails it (EFAULT). */
  if (!readable) return;
  /* link's existing file reached by a descriptor of a file with no name (O_TMPFILE): nothing to save. */
  if (resolved < 0 && (how & TOUCH_OPTIONAL)) return;
  if (resolved < 0) {
    store_unundoable("a path whose place could not be known", p);
    return;
  }
  const char *rel;
  int k = root_of(abs, &rel);
  /* In a root, unless through a symlink there (a symlinked package directory, a link to a file). */
  if (k >= 0 && store_touch(k, rel, (how & ~TOUCH_OPTIONAL) | TOUCH_LINKS_BACK) == 0) return;
  int in_root = k >= 0;
  /* Outside every root as written, or through a symlink, or a magic link (/proc/self/fd/N, /dev/fd/N): it
   * may still land in one. Its real place, as the caller's own resolution would find it. */
  char real[4096];
  int followed = sandbox_real_path(n->pid, abs, (how & TOUCH_FOLLOWS) != 0, real, sizeof real);
  if (followed < 0) {
    /* Fail closed where the path was in a root (its symlink's place unknown), or went through a magic link. */
    if (errno == EXDEV || in_root) store_unundoable("a path through a link whose place could not be known", abs);
    return;
  }
  if (ioctl(listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &id) < 0) return;
  k = root_of(real, &rel);
  /* Followed to what is there: the object itself (no symlink left to go through). */
  if (k >= 0) store_touch(k, rel, how & ~(TOUCH_OPTIONAL | (followed ? TOUCH_FOLLOWS : 0)));
  /* Outside every root where it lands: a read-only mount there refuses it, reported as a denial naming
   * where it lands (not the path as written, which the command chooses freely through its own links). */
  else if (!(how & TOUCH_OPTIONAL) && write_refused(n->pid, n->id, listener, real, (how & TOUCH_FOLLOWS) != 0))
    store_write_refused(real);
}

/* How an open with FLAGS may change its path; -1: it cannot (read-only, not creating). */
static int open_how(unsigned long long flags, int follows) {
  int writes = (flags & O_ACCMODE) != O_RDONLY || (flags & O_TRUNC);
  if (!writes && !(flags & O_CREAT)) return -1;
  return (writes ? TOUCH_CONTENT : 0) | (follows && !(flags & O_NOFOLLOW) ? TOUCH_FOLLOWS : 0);
}

/* Whether the trapped call N creates a process: the filter traps it only when the run's capabilities
 * refuse subprocesses (notify.c; a clone with CLONE_THREAD is never trapped). */
static int is_spawn(const struct seccomp_notif *n) {
#ifdef SYS_fork
  if (n->data.nr == SYS_fork) return 1;
#endif
#ifdef SYS_vfork
  if (n->data.nr == SYS_vfork) return 1;
#endif
  return n->data.nr == SYS_clone;
}

/* Reports the refused process creation of N: the caller's name (its comm, read while its call is pending;
 * a caller already gone is not reported). */
static void report_spawn(const struct seccomp_notif *n, int listener) {
  char path[64], comm[32];
  snprintf(path, sizeof path, "/proc/%d/comm", (int)n->pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  ssize_t got = fd < 0 ? -1 : read(fd, comm, sizeof comm - 1);
  if (fd >= 0) close(fd);
  __u64 id = n->id;
  if (ioctl(listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &id) < 0) return;
  if (got <= 0) got = snprintf(comm, sizeof comm, "?");
  comm[got] = '\0';
  if (got > 0 && comm[got - 1] == '\n') comm[got - 1] = '\0';
  store_spawn_refused(comm[0] == '\0' ? "?" : comm);
}

/* Records what the trapped call N is about to change. */
static void handle(const struct seccomp_notif *n, int listener) {
  const struct trapped_call *c = changes_call(n->data.nr);
  if (c == NULL) return;
  char mempath[64];
  snprintf(mempath, sizeof mempath, "/proc/%d/mem", (int)n->pid);
  int mem = open(mempath, O_RDONLY | O_CLOEXEC);
  if (mem < 0) {
    store_unundoable("a trapped call's memory could not be read", NULL);
    return;
  }
  int how = 0, how2 = TOUCH_REPLACE;
  if (c->kind == CK_OPEN) {
    unsigned long long flags = c->flags >= 0 ? n->data.args[c->flags] : O_CREAT | O_WRONLY | O_TRUNC;
    struct open_how oh;
    if (c->nr == SYS_openat2 && pread(mem, &oh, sizeof oh.flags, (off_t)n->data.args[2]) == sizeof oh.flags) flags = oh.flags;
    how = open_how(flags, 1);
  } else if (c->kind == CK_REMOVE) {
    how = TOUCH_REPLACE;
  } else if (c->kind == CK_RENAME) {
    how = TOUCH_CONTENT; /* the inode lives on at the new path: its bytes may change there */
    if (c->nr == SYS_renameat2 && (n->data.args[4] & 2 /* RENAME_EXCHANGE */)) how2 = TOUCH_CONTENT;
  } else if (c->kind == CK_CREATE) {
    how2 = TOUCH_CONTENT | TOUCH_OPTIONAL; /* link: the existing file, whose bytes the new link can change */
  } else if (c->kind == CK_META) {
    int nofollow = c->flags >= 0 && (n->data.args[c->flags] & AT_SYMLINK_NOFOLLOW);
    how = (c->nr == SYS_truncate ? TOUCH_CONTENT : 0) | (c->follows && !nofollow ? TOUCH_FOLLOWS : 0);
  }
  /* The caller's own earlier rename has returned: its move, if it moved a directory, is decided. */
  moves_settle(n->pid, 0, store_look);
  int rename = c->kind == CK_RENAME;
  if (rename) moves_rename_begin(n->pid, n->data.nr, how2 == TOUCH_CONTENT);
  /* The memory read is the caller's only while its call is still pending (not a new process of that pid). */
  if (how >= 0) touch_arg(n, mem, c->dirfd, c->path, how | (rename ? TOUCH_MOVE_SRC : 0), listener);
  if (how >= 0 && c->path2 >= 0) touch_arg(n, mem, c->dirfd2, c->path2, how2 | (rename ? TOUCH_MOVE_DST : 0), listener);
  if (rename) moves_rename_end();
  close(mem);
}

/* Answers trapped calls until every process holding the filter is gone (or the grace after the stop
 * request ends). */
static void serve(int listener) {
  struct seccomp_notif_sizes sizes = {0};
  if (syscall(SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &sizes) < 0) sizes.seccomp_notif = sizeof(struct seccomp_notif);
  size_t req_size = sizes.seccomp_notif > sizeof(struct seccomp_notif) ? sizes.seccomp_notif : sizeof(struct seccomp_notif);
  size_t resp_size = sizes.seccomp_notif_resp > sizeof(struct seccomp_notif_resp) ? sizes.seccomp_notif_resp : sizeof(struct seccomp_notif_resp);
  struct seccomp_notif *req = malloc(req_size);
  struct seccomp_notif_resp *resp = malloc(resp_size);
  if (req == NULL || resp == NULL) die("launch: out of memory");
  int timeout = -1;
  for (;;) {
    struct pollfd p[2] = {{.fd = listener, .events = POLLIN}, {.fd = stop_pipe[0], .events = POLLIN}};
    int r = poll(p, timeout < 0 ? 2 : 1, timeout);
    if (r < 0 && errno == EINTR) continue;
    if (r == 0) {
      store_unundoable("a process of the run outlived it", NULL);
      break;
    }
    if (r > 0 && timeout < 0 && (p[1].revents & POLLIN)) timeout = STOP_GRACE_MS;
    if (p[0].revents & POLLIN) {
      memset(req, 0, req_size);
      if (ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, req) < 0) continue;
      int spawn = is_spawn(req);
      if (spawn) report_spawn(req, listener);
      else handle(req, listener);
      memset(resp, 0, resp_size);
      resp->id = req->id;
      /* Refused process creation fails as the main filter's refusal would (EPERM: "Cannot fork"). */
      if (spawn) resp->error = -EPERM;
      else resp->flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
      ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, resp); /* ENOENT: the caller is gone */
    } else if (p[0].revents & (POLLHUP | POLLERR)) {
      break;
    }
  }
  free(req);
  free(resp);
}

#ifndef SECCOMP_IOCTL_NOTIF_SET_FLAGS
#define SECCOMP_IOCTL_NOTIF_SET_FLAGS SECCOMP_IOW(4, __u64)
#endif
#ifndef SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP
#define SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP (1UL << 0)
#endif

static void *supervise_thread(void *arg) {
  (void)arg;
  int listener = receive_listener();
  if (listener >= 0) {
    /* Linux 6.6: a trapped call wakes this thread on the caller's CPU at once, and the answer wakes the
     * caller so (a round trip of a few microseconds instead of two scheduler wake-ups). Older: as before. */
    ioctl(listener, SECCOMP_IOCTL_NOTIF_SET_FLAGS, SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP);
    serve(listener);
    close(listener);
  }
  return NULL;
}

void supervise_start(void) {
  close(sock[1]);
  sock[1] = -1;
  sigset_t all, old;
  sigfillset(&all);
  /* The stop signals stay the main thread's. */
  pthread_sigmask(SIG_BLOCK, &all, &old);
  started = pthread_create(&thread, NULL, supervise_thread, NULL) == 0;
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (!started) store_unrecorded("the supervisor thread could not start");
}

void supervise_finish(void) {
  if (started) {
    if (write(stop_pipe[1], "x", 1) < 0) {
    }
    pthread_join(thread, NULL);
  }
  close(sock[0]);
  store_finish();
}
