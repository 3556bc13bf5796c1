/*
 * The trapping filter and the hand-over of its listener (notify.h). The filter checks the architecture
 * (another one is the main filter's business: allowed here), then traps the mutating calls; open, openat
 * and creat only with a flag that can write or create (read-only opens stay untrapped), openat2 always (its
 * flags are in a struct: the supervisor reads them). When it carries the spawn denial, it also traps
 * process creation (fork, vfork, clone without CLONE_THREAD), which the supervisor refuses and reports.
 */
#define _GNU_SOURCE
#include "notify.h"

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../common/errors.h"
#include "syscalls.h"

#if defined(__x86_64__)
#define NOTIFY_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define NOTIFY_ARCH AUDIT_ARCH_AARCH64
#endif

#if __BYTE_ORDER == __LITTLE_ENDIAN
#define LOW_WORD 0
#else
#define LOW_WORD 4
#endif
#define ARG_LOW(i) (offsetof(struct seccomp_data, args) + 8 * (i) + LOW_WORD)
#define WRITE_FLAGS (O_WRONLY | O_RDWR | O_CREAT | O_TRUNC)
#define CLONE_THREAD_FLAG 0x00010000

#define MAX_INSNS 128

struct builder {
  struct sock_filter f[MAX_INSNS];
  int n;
};

static void emit(struct builder *b, struct sock_filter insn) {
  if (b->n < MAX_INSNS) b->f[b->n++] = insn;
}

/* Process creation trapped: fork, vfork, and clone without CLONE_THREAD (clone3 is ENOSYS in the main
 * filter, so libc falls back to clone, whose flags are seen here). */
static void trap_spawn(struct builder *b) {
  emit(b, (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)));
#ifdef SYS_fork
  emit(b, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_fork, 0, 1));
  emit(b, (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF));
#endif
#ifdef SYS_vfork
  emit(b, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_vfork, 0, 1));
  emit(b, (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF));
#endif
  /* nr == clone ? (flags & CLONE_THREAD ? allow : notify) : next */
  emit(b, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_clone, 0, 4));
  emit(b, (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LOW(0)));
  emit(b, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, CLONE_THREAD_FLAG, 1, 0));
  emit(b, (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF));
  emit(b, (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
}

/* The filter: [arch] [process creation] nr; per flag-checked open: jeq → load flags, test, notify or
 * allow; per other call: jeq → notify. */
static int build(struct builder *b, int spawn) {
#ifndef NOTIFY_ARCH
  (void)b;
  (void)spawn;
  errno = ENOSYS;
  return -1;
#else
  emit(b, (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)));
  emit(b, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, NOTIFY_ARCH, 1, 0));
  emit(b, (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
  if (spawn) trap_spawn(b);
  for (int i = 0; i < changes_ncalls; i++) {
    const struct trapped_call *c = &changes_calls[i];
    if (c->kind != CK_OPEN || c->flags < 0) continue;
    /* nr == open-like ? (flags & WRITE_FLAGS ? notify : allow) : next */
    emit(b, (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)));
    emit(b, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)c->nr, 0, 4));
    emit(b, (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LOW(c->flags)));
    emit(b, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, WRITE_FLAGS, 1, 0));
    emit(b, (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
    emit(b, (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF));
  }
  emit(b, (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)));
  for (int i = 0; i < changes_ncalls; i++) {
    const struct trapped_call *c = &changes_calls[i];
    if (c->kind == CK_OPEN && c->flags >= 0) continue;
    emit(b, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)c->nr, 0, 1));
    emit(b, (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF));
  }
  emit(b, (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
  return b->n < MAX_INSNS ? 0 : (errno = E2BIG, -1);
#endif
}

/* The listener of a new trapping filter, or -1 (errno). */
static int install(int spawn) {
  static struct builder b;
  b.n = 0;
  if (build(&b, spawn) < 0) return -1;
  struct sock_fprog prog = {.len = (unsigned short)b.n, .filter = b.f};
  /* Killable waits (5.19): a trapped call is not interrupted by a signal the command handles. */
  long fd = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
                    SECCOMP_FILTER_FLAG_NEW_LISTENER | SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV, &prog);
  if (fd < 0 && errno == EINVAL) fd = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
  return (int)fd;
}

void changes_hand_over(int sock, int deny_spawn) {
  int listener = install(deny_spawn);
  int err = listener < 0 ? errno : 0;
  char cbuf[CMSG_SPACE(sizeof(int))];
  memset(cbuf, 0, sizeof cbuf);
  struct iovec iov = {.iov_base = &err, .iov_len = sizeof err};
  struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
  if (listener >= 0) {
    msg.msg_control = cbuf;
    msg.msg_controllen = sizeof cbuf;
    struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &listener, sizeof(int));
  }
  while (sendmsg(sock, &msg, MSG_NOSIGNAL) < 0 && errno == EINTR) {
  }
  if (listener >= 0) close(listener);
  close(sock);
  /* Fail closed: the main filter lets process creation through, counting on this one to refuse it. */
  if (listener < 0 && deny_spawn) die("the filter refusing subprocesses could not be installed: %s", strerror(err));
}

const char *changes_probe(char *buf, size_t len) {
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) return snprintf(buf, len, "no_new_privs: %s", strerror(errno)), buf;
  int listener = install(0);
  if (listener < 0) return snprintf(buf, len, "a filter with a user-notification listener: %s", strerror(errno)), buf;
  pid_t c = fork();
  if (c == 0) {
    /* Trapped (O_CREAT): answered by the parent, then done for real. */
    int fd = open("/dev/null", O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    _exit(fd < 0 ? 1 : 0);
  }
  if (c < 0) return snprintf(buf, len, "fork: %s", strerror(errno)), buf;
  struct seccomp_notif req;
  struct seccomp_notif_resp resp;
  memset(&req, 0, sizeof req);
  int got = ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, &req);
  int e = errno;
  if (got == 0) {
    memset(&resp, 0, sizeof resp);
    resp.id = req.id;
    resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
    if (ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp) < 0) e = errno, got = -1;
  }
  int status = 0;
  if (got < 0) kill(c, SIGKILL);
  waitpid(c, &status, 0);
  if (got < 0) return snprintf(buf, len, "answering a trapped call: %s", strerror(e)), buf;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return snprintf(buf, len, "a trapped call did not go on"), buf;
  return "ok";
}
