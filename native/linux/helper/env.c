/* The program's environment (env.h): NUL-separated NAME=VALUE entries read from a descriptor. */
#define _GNU_SOURCE
#include "env.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/errors.h"

char **read_env(int fd) {
  size_t cap = 16384, len = 0;
  char *buf = malloc(cap + 1);
  if (buf == NULL) die("out of memory");
  for (;;) {
    if (len == cap) {
      cap *= 2;
      if (cap > (1 << 20)) die("the environment is larger than 1 MiB");
      buf = realloc(buf, cap + 1);
      if (buf == NULL) die("out of memory");
    }
    ssize_t r = read(fd, buf + len, cap - len);
    if (r < 0) {
      if (errno == EINTR) continue;
      die("read environment: %s", strerror(errno));
    }
    if (r == 0) break;
    len += (size_t)r;
  }
  close(fd);
  buf[len] = '\0';
  size_t n = 0;
  for (size_t k = 0; k < len; k++) n += buf[k] == '\0';
  char **env = calloc(n + 2, sizeof *env);
  if (env == NULL) die("out of memory");
  size_t j = 0;
  for (size_t k = 0; k < len; k += strlen(buf + k) + 1) {
    if (strchr(buf + k, '=') == NULL) die("environment entry without '=': %.40s", buf + k);
    env[j++] = buf + k;
  }
  env[j] = NULL;
  return env;
}
