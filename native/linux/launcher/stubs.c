/*
 * Stubs (stubs.h): made on the parent's descriptor (mkdirat, or openat with O_EXCL), or taken out of the
 * park (park.c); and their records: the protected paths the launcher created as empty stubs below a
 * writable root, one "KIND DEV INO REL" line each in `stubs-DEV-INO.list` under --state, so the last run
 * using the root (or, after a killed run, the next one) removes exactly those, and only while they are
 * still the empty stubs it made.
 */
#define _GNU_SOURCE
#include "stubs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/errors.h"
#include "../common/paths.h"
#include "park.h"

int stub_make(int state_fd, int parent_fd, const struct stat *parent, const char *base, char kind,
              const char *shown) {
  if (park_take(state_fd, parent_fd, parent, base, kind) == 0) return 0;
  if (kind == 'd') return mkdirat(parent_fd, base, 0755);
  int made = openat(parent_fd, base, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (made >= 0 && kind == 'c' && write(made, ".\n", 2) != 2)
    die("launch: writing the stub %s: %s", shown, strerror(errno));
  if (made >= 0) made = close(made);
  return made;
}

void stub_own_like(int fd, struct stat *st, const struct stat *parent) {
  if (geteuid() == 0 && (st->st_uid != parent->st_uid || st->st_gid != parent->st_gid)) {
    if (fchownat(fd, "", parent->st_uid, parent->st_gid, AT_EMPTY_PATH) == 0) {
      st->st_uid = parent->st_uid;
      st->st_gid = parent->st_gid;
    }
  }
}

void stub_record(int record, char kind, const struct stat *st, const char *rel) {
  char line[1100];
  int len = snprintf(line, sizeof line, "%c %llx %llx %s\n", kind, (unsigned long long)st->st_dev,
                     (unsigned long long)st->st_ino, rel);
  if (len >= (int)sizeof line || write(record, line, (size_t)len) != len)
    die("launch: cannot record the stub %s: %s", rel, strerror(errno));
}

int read_record(int record, struct recorded *items, int max) {
  FILE *f = fdopen(dup(record), "r");
  if (f == NULL) return 0;
  rewind(f);
  int n = 0;
  while (n < max && fscanf(f, " %c %llx %llx %1023s", &items[n].kind, &items[n].dev, &items[n].ino, items[n].rel) == 4)
    n++;
  fclose(f);
  return n;
}

void remove_recorded(int state_fd, int root, int record) {
  struct recorded *items = calloc(MAX_RECORDED, sizeof *items);
  if (items == NULL) die("out of memory");
  int n = read_record(record, items, MAX_RECORDED);
  /* Newest first: a stub made inside another stub goes before it. */
  for (int k = n - 1; k >= 0; k--) {
    char *rel = items[k].rel;
    char *slash = strrchr(rel, '/');
    int dirfd = root, opened = -1;
    const char *base = rel;
    if (slash != NULL) {
      *slash = '\0';
      opened = open_path(root, rel, RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS);
      if (opened < 0) continue;
      dirfd = opened;
      base = slash + 1;
    }
    struct stat st;
    if (fstatat(dirfd, base, &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_dev == items[k].dev && st.st_ino == items[k].ino) {
      if (park_return(state_fd, dirfd, base, items[k].kind, &st) == 0) {
        /* parked for the next run (park.c) */
      } else if (items[k].kind == 'd' && S_ISDIR(st.st_mode)) unlinkat(dirfd, base, AT_REMOVEDIR); /* fails if not empty */
      else if (items[k].kind == 'f' && S_ISREG(st.st_mode) && st.st_size == 0) unlinkat(dirfd, base, 0);
      else if (items[k].kind == 'c' && S_ISREG(st.st_mode) && st.st_size == 2) unlinkat(dirfd, base, 0);
    }
    if (opened >= 0) close(opened);
  }
  free(items);
  if (ftruncate(record, 0) < 0) die("launch: cannot truncate a stub record: %s", strerror(errno));
}

