/*
 * A test launcher standing in for a container runtime whose seccomp profile refuses the sandbox's own
 * mechanisms while the kernel still describes them: landlock_restrict_self gets EPERM (landlock_create_ruleset
 * still answers the ABI query), and so do nested seccomp filters (prctl(PR_SET_SECCOMP) and seccomp(2);
 * PR_GET_SECCOMP still answers). Then it execs its arguments.
 * Build: cc -O2 -o no-sandboxing no-sandboxing.c; run: no-sandboxing PROGRAM ARGS…
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef __NR_landlock_restrict_self
#define __NR_landlock_restrict_self 446
#endif

#define LD(off) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, off)
#define RET(v) BPF_STMT(BPF_RET | BPF_K, v)

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: no-sandboxing PROGRAM [ARGS]\n");
    return 2;
  }
  struct sock_filter f[] = {
      LD(offsetof(struct seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_landlock_restrict_self, 0, 1), RET(SECCOMP_RET_ERRNO | EPERM),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_seccomp, 0, 1), RET(SECCOMP_RET_ERRNO | EPERM),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_prctl, 0, 3),
      LD(offsetof(struct seccomp_data, args[0])),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, PR_SET_SECCOMP, 0, 1), RET(SECCOMP_RET_ERRNO | EPERM),
      RET(SECCOMP_RET_ALLOW),
  };
  struct sock_fprog prog = {.len = sizeof f / sizeof f[0], .filter = f};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) < 0) {
    perror("no-sandboxing: seccomp");
    return 125;
  }
  execvp(argv[1], &argv[1]);
  fprintf(stderr, "no-sandboxing: cannot execute %s: %s\n", argv[1], strerror(errno));
  return 127;
}
