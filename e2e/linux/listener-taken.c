/* Runs argv[1..] under a seccomp filter that already has a user-notification listener (one that traps
 * nothing the program makes: the syscall number 0xfff), so a second listener in the chain is refused
 * (EBUSY), as on a host whose runtime holds one. */
#define _GNU_SOURCE
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
int main(int argc, char **argv) {
  struct sock_filter f[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 0),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0xfff, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  struct sock_fprog prog = {.len = 4, .filter = f};
  if (argc < 2 || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) return 125;
  long listener = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
  if (listener < 0) {
    perror("seccomp");
    return 125;
  }
  /* The listener stays open here (a closed one no longer counts) while the program runs in a child. */
  pid_t c = fork();
  if (c < 0) return 125;
  if (c > 0) {
    int status = 0;
    waitpid(c, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  close((int)listener);
  execvp(argv[1], argv + 1);
  perror("exec");
  return 127;
}
