/*
 * Closing a range of descriptors (closefrom.h). close_range(2) first; where it is missing (ENOSYS) or
 * refuses the range (EINVAL: gVisor), the open descriptors are listed from /proc/self/fd and those in the
 * range closed, the listing's own descriptor last.
 */
#define _GNU_SOURCE
#include "closefrom.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "compat.h"

int close_fds(unsigned first, unsigned last) {
  if (syscall(SYS_close_range, first, last, 0) == 0) return 0;
  if (errno != ENOSYS && errno != EINVAL) return -1;
  DIR *d = opendir("/proc/self/fd");
  if (d == NULL) return -1;
  int own = dirfd(d);
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    char *end;
    unsigned long fd = strtoul(e->d_name, &end, 10);
    if (*end != '\0' || end == e->d_name || (int)fd == own) continue;
    if (fd >= first && fd <= last) close((int)fd);
  }
  closedir(d);
  return 0;
}
