/*
 * Limits of the sandbox's own namespaces (ns-limits.h): pid_max of its PID namespace and the per-user
 * counts of its user namespace, written below descriptors of the host's /proc/sys the launcher opened.
 */
#define _GNU_SOURCE
#include "ns-limits.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "../common/errors.h"

/* The inodes of the host's (initial) PID and user namespaces, as /proc/self/ns/pid and ns/user show them
 * (PROC_PID_INIT_INO, PROC_USER_INIT_INO). */
#define INIT_PID_NS_INO 0xEFFFFFFCUL
#define INIT_USER_NS_INO 0xEFFFFFFDUL

void ns_limits_init(struct ns_limits *l) {
  memset(l, 0, sizeof *l);
  l->kernel_dir = l->user_dir = -1;
}

/* NAME=N with NAME of /proc/sys/user (max_ and lower-case letters or _ only, no path). */
static void add_user_limit(struct ns_limits *l, const char *spec) {
  const char *eq = strchr(spec, '=');
  size_t len = eq == NULL ? 0 : (size_t)(eq - spec);
  if (eq == NULL || len >= sizeof l->user[0].name || strncmp(spec, "max_", 4) != 0 ||
      strspn(spec, "abcdefghijklmnopqrstuvwxyz_") != len)
    die("bad --userns-limit %s (want max_NAME=N)", spec);
  if (l->n >= MAX_USERNS_LIMITS) die("too many --userns-limit");
  memcpy(l->user[l->n].name, spec, len);
  l->user[l->n].name[len] = '\0';
  l->user[l->n].value = parse_long(eq + 1, "userns limit");
  if (l->user[l->n].value < 0) die("bad --userns-limit %s", spec);
  l->n++;
}

int ns_limits_option(struct ns_limits *l, const char *a, const char *v) {
  if (strcmp(a, "--sysctl-kernel") == 0) l->kernel_dir = (int)parse_long(v, "fd");
  else if (strcmp(a, "--sysctl-user") == 0) l->user_dir = (int)parse_long(v, "fd");
  else if (strcmp(a, "--pid-max") == 0) {
    l->pid_max = parse_long(v, "pid_max");
    if (l->pid_max <= 0) die("bad --pid-max %s", v);
  } else if (strcmp(a, "--userns-limit") == 0) add_user_limit(l, v);
  else return 0;
  return 1;
}

int kernel_at_least(int major, int minor) {
  struct utsname u;
  if (uname(&u) < 0) return 0;
  char *end;
  long ma = strtol(u.release, &end, 10);
  long mi = *end == '.' ? strtol(end + 1, NULL, 10) : 0;
  return ma > major || (ma == major && mi >= minor);
}

/* 1 when this process is in the host's namespace of KIND (pid, user), or that cannot be told. */
static int in_host_namespace(const char *kind, unsigned long init_ino) {
  char path[32], link[64];
  snprintf(path, sizeof path, "/proc/self/ns/%s", kind);
  ssize_t n = readlink(path, link, sizeof link - 1);
  if (n <= 0) return 1;
  link[n] = '\0';
  const char *open_bracket = strchr(link, '[');
  if (strncmp(link, kind, strlen(kind)) != 0 || open_bracket == NULL) return 1;
  return strtoul(open_bracket + 1, NULL, 10) == init_ino;
}

/* Writes VALUE to NAME below DIR and checks it reads back. */
static void write_sysctl(int dir, const char *where, const char *name, long value) {
  char text[32];
  int len = snprintf(text, sizeof text, "%ld\n", value);
  int fd = openat(dir, name, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) die("opening %s/%s of the sandbox's namespace: %s", where, name, strerror(errno));
  if (write(fd, text, (size_t)len) != len) die("writing %ld to %s/%s: %s", value, where, name, strerror(errno));
  close(fd);
  char back[32] = {0};
  fd = openat(dir, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  ssize_t r = fd < 0 ? -1 : read(fd, back, sizeof back - 1);
  if (fd >= 0) close(fd);
  if (r <= 0 || strtol(back, NULL, 10) != value) die("%s/%s does not read back as %ld", where, name, value);
}

void ns_limits_apply(struct ns_limits *l) {
  if (l->pid_max > 0) {
    if (l->kernel_dir < 0) die("--pid-max needs --sysctl-kernel");
    /* Before 6.14 pid_max is the whole host's: a process of kernel uid 0 could write it. Never. */
    if (!kernel_at_least(6, 14)) die("--pid-max: per-PID-namespace pid_max needs Linux 6.14 or later");
    if (in_host_namespace("pid", INIT_PID_NS_INO)) die("--pid-max: not in a PID namespace of the sandbox's own");
    write_sysctl(l->kernel_dir, "/proc/sys/kernel", "pid_max", l->pid_max);
  }
  if (l->n > 0 && l->user_dir < 0) die("--userns-limit needs --sysctl-user");
  if (l->n > 0 && in_host_namespace("user", INIT_USER_NS_INO))
    die("--userns-limit: not in a user namespace of the sandbox's own");
  for (int i = 0; i < l->n; i++) write_sysctl(l->user_dir, "/proc/sys/user", l->user[i].name, l->user[i].value);
  if (l->kernel_dir >= 0) close(l->kernel_dir);
  if (l->user_dir >= 0) close(l->user_dir);
  l->kernel_dir = l->user_dir = -1;
}
