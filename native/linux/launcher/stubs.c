/*
 * Stub records (the launcher's, see launch.c): the protected paths it created as empty stubs below a
 * writable root, one "KIND DEV INO REL" line each in `stubs-DEV-INO.list` under --state, so the last run
 * using the root (or, after a killed run, the next one) removes exactly those, and only while they are
 * still the empty stubs it made.
 */
#include "../common/common.h"

/* Reads a root's stub record ("KIND DEV INO REL" lines, oldest first) into ITEMS; returns how many. */
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

