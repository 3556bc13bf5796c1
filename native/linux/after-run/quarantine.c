/*
 * Setting aside what a command wrote where host tools would read it (the git sweep, sweep.c, and tier 3's
 * guard, guard-check.c): renamed to `NAME.aleph-quarantined[-N]` in its own directory, or removed where no
 * such name can be had; every step on descriptors, never following a symlink.
 */
#define _GNU_SOURCE
#include "quarantine.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "../common/report.h"

/* How deep remove_entry goes below what it removes. */
#define REMOVE_MAX_DEPTH 40

int remove_entry(int dirfd, const char *name, int depth) {
  if (unlinkat(dirfd, name, 0) == 0 || errno == ENOENT) return 0;
  if ((errno != EISDIR && errno != EPERM) || depth > REMOVE_MAX_DEPTH) return -1;
  int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  DIR *dir = fd >= 0 ? fdopendir(fd) : NULL;
  if (dir == NULL) {
    if (fd >= 0) close(fd);
    return -1;
  }
  /* Passes until one removes nothing: entries removed while reading may hide others from that pass. */
  for (int pass = 0, removed = 1; removed && pass < 16; pass++) {
    removed = 0;
    rewinddir(dir);
    struct dirent *e;
    while ((e = readdir(dir)) != NULL) {
      if (e->d_name[0] == '.' && (e->d_name[1] == '\0' || (e->d_name[1] == '.' && e->d_name[2] == '\0'))) continue;
      if (remove_entry(fd, e->d_name, depth + 1) == 0) removed = 1;
    }
  }
  closedir(dir);
  return unlinkat(dirfd, name, AT_REMOVEDIR);
}

int set_aside(int dirfd, const char *name, FILE *report, const char *path) {
  char target[320];
  int e = 0;
  for (int n = 0; n <= 100; n++) {
    if (n == 0) snprintf(target, sizeof target, "%s.aleph-quarantined", name);
    else if (n < 100) snprintf(target, sizeof target, "%s.aleph-quarantined-%d", name, n);
    else {
      /* Every numbered name is taken (a command can make them all): one it cannot guess. */
      unsigned long long r = 0;
      if (getrandom(&r, sizeof r, 0) != (ssize_t)sizeof r) break;
      snprintf(target, sizeof target, "%s.aleph-quarantined-%016llx", name, r);
    }
    if (renameat2(dirfd, name, dirfd, target, RENAME_NOREPLACE) == 0) {
      report_line(report, "quarantined", path, NULL);
      return 0;
    }
    e = errno;
    if (e != EEXIST) break;
  }
  /* No name to rename it to (a name too long for a suffix, say): what the command wrote goes instead. */
  if (remove_entry(dirfd, name, 0) == 0) {
    report_line(report, "removed", path, NULL);
    return 0;
  }
  report_line(report, "failed", path, strerror(e != 0 ? e : errno));
  return -1;
}
