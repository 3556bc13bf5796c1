/* The seccomp-BPF program (seccomp.h): read whole from its descriptor, loaded with PR_SET_SECCOMP. */
#define _GNU_SOURCE
#include "seccomp.h"

#include <errno.h>
#include <linux/seccomp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "../common/errors.h"

struct sock_fprog read_seccomp(int fd) {
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

void load_seccomp(const struct sock_fprog *prog) {
  if (prog->filter != NULL && prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, prog, 0, 0) < 0) {
    die("loading seccomp filter: %s", strerror(errno));
  }
}
