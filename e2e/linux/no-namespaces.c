/*
 * A test launcher standing in for a container runtime's seccomp profile: namespace creation (unshare, and
 * clone with a namespace flag), mount and the new mount API, and setns get EPERM; clone3 gets ENOSYS (so
 * libc falls back to clone, whose flags are checked). Then it execs its arguments.
 * Build: cc -O2 -o no-namespaces no-namespaces.c; run: no-namespaces PROGRAM ARGS…
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#define NS_FLAGS (CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET | 0x80)
#define LD(off) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, off)
#define RET(v) BPF_STMT(BPF_RET | BPF_K, v)
#define IS(nr) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, nr, 0, 1)

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: no-namespaces PROGRAM [ARGS]\n");
    return 2;
  }
  struct sock_filter f[] = {
      LD(offsetof(struct seccomp_data, nr)),
      IS(__NR_clone3), RET(SECCOMP_RET_ERRNO | ENOSYS),
      IS(__NR_mount), RET(SECCOMP_RET_ERRNO | EPERM),
      IS(__NR_setns), RET(SECCOMP_RET_ERRNO | EPERM),
      IS(__NR_open_tree), RET(SECCOMP_RET_ERRNO | EPERM),
      IS(__NR_mount_setattr), RET(SECCOMP_RET_ERRNO | EPERM),
      IS(__NR_move_mount), RET(SECCOMP_RET_ERRNO | EPERM),
      IS(__NR_fsopen), RET(SECCOMP_RET_ERRNO | EPERM),
      IS(__NR_pivot_root), RET(SECCOMP_RET_ERRNO | EPERM),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_unshare, 1, 0),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone, 0, 3),
      LD(offsetof(struct seccomp_data, args[0])),
      BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, NS_FLAGS, 0, 1), RET(SECCOMP_RET_ERRNO | EPERM),
      RET(SECCOMP_RET_ALLOW),
  };
  struct sock_fprog prog = {.len = sizeof f / sizeof f[0], .filter = f};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) < 0) {
    perror("no-namespaces: seccomp");
    return 125;
  }
  execvp(argv[1], &argv[1]);
  fprintf(stderr, "no-namespaces: cannot execute %s: %s\n", argv[1], strerror(errno));
  return 127;
}
