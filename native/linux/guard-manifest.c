/*
 * The guard's snapshot on disk (see guard.c) and its life: taken or shared before the run, removed by the
 * last run using the root.
 */
#include "guard.h"

/* ── The manifest: `aleph-guard 1 TAKEN_S TAKEN_NS COPIES BYTES`, then R (a protected path the snapshot
 * holds), U (a unit) and E (an entry of the unit above) lines; paths %-escaped. ── */

static void put_rel(FILE *f, const char *s) {
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c <= 0x20 || c == '%' || c >= 0x7f) fprintf(f, "%%%02X", c);
    else fputc(c, f);
  }
  fputc('\n', f);
}

static void unescape(char *s) {
  char *o = s;
  for (; *s; s++) {
    unsigned v;
    if (s[0] == '%' && sscanf(s + 1, "%2x", &v) == 1) {
      *o++ = (char)v;
      s += 2;
    } else {
      *o++ = *s;
    }
  }
  *o = '\0';
}

static void save(struct guard *g) {
  int fd = openat(g->snapfd, "manifest.tmp", O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
  FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
  if (f == NULL) die("launch: cannot write the protected-path snapshot %s: %s", g->key, strerror(errno));
  fprintf(f, "aleph-guard 1 %lld %ld %d %lld\n", (long long)g->taken.tv_sec, g->taken.tv_nsec, g->ndata, g->bytes);
  for (int i = 0; i < g->ntops; i++) {
    fputs("R ", f);
    put_rel(f, g->tops[i]);
  }
  for (int i = 0; i < g->nunits; i++) {
    const struct gunit *u = &g->units[i];
    fprintf(f, "U %c %d %d ", u->kind, u->present, u->kept);
    put_rel(f, u->rel);
    for (int k = u->first; k < u->first + u->count; k++) {
      const struct gentry *e = &g->entries[k];
      fprintf(f, "E %c %o %u %u %lld %llx %llx %lld %lld %lld %lld %d ", e->type, e->mode, e->uid, e->gid, e->size,
              e->dev, e->ino, e->cs, e->cn, e->ms, e->mn, e->data);
      put_rel(f, e->rel);
    }
  }
  if (fclose(f) != 0 || renameat(g->snapfd, "manifest.tmp", g->snapfd, "manifest") < 0)
    die("launch: cannot write the protected-path snapshot %s: %s", g->key, strerror(errno));
}

/* Reads the manifest; 0 when there is none (or it is not whole). */
static int load(struct guard *g) {
  int fd = openat(g->snapfd, "manifest", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  FILE *f = fd >= 0 ? fdopen(fd, "r") : NULL;
  if (f == NULL) return 0;
  char *line = NULL;
  size_t cap = 0;
  ssize_t len;
  long long ts, tn;
  int ok = getline(&line, &cap, f) > 0 &&
           sscanf(line, "aleph-guard 1 %lld %lld %d %lld", &ts, &tn, &g->ndata, &g->bytes) == 4;
  g->taken.tv_sec = (time_t)ts;
  g->taken.tv_nsec = (long)tn;
  int unit = -1;
  while (ok && (len = getline(&line, &cap, f)) > 0) {
    if (line[len - 1] == '\n') line[len - 1] = '\0';
    int at = 0;
    char kind;
    struct gentry e;
    if (line[0] == 'R' && line[1] == ' ') {
      unescape(line + 2);
      if (g->ntops < GUARD_MAX_PATHS) g->tops[g->ntops++] = dup_str(line + 2);
    } else if (line[0] == 'U' && line[1] == ' ') {
      int present, kept;
      ok = sscanf(line, "U %c %d %d %n", &kind, &present, &kept, &at) == 3 && at > 0;
      if (!ok) break;
      unescape(line + at);
      unit = add_unit(g, kind, line + at);
      g->units[unit].present = present;
      g->units[unit].kept = kept;
    } else if (line[0] == 'E' && unit >= 0) {
      ok = sscanf(line, "E %c %o %u %u %lld %llx %llx %lld %lld %lld %lld %d %n", &e.type, &e.mode, &e.uid, &e.gid,
                  &e.size, &e.dev, &e.ino, &e.cs, &e.cn, &e.ms, &e.mn, &e.data, &at) == 12 &&
           at > 0;
      if (!ok) break;
      unescape(line + at);
      e.rel = line + at;
      add_entry(g, &e);
      g->units[unit].count++;
    } else {
      ok = 0;
    }
  }
  free(line);
  fclose(f);
  if (!ok) return 0;
  link_entries(g);
  return 1;
}

static void clear(struct guard *g) {
  for (int i = 0; i < g->nunits; i++) free(g->units[i].rel);
  for (int k = 0; k < g->nentries; k++) free(g->entries[k].rel);
  for (int i = 0; i < g->ntops; i++) free(g->tops[i]);
  g->nunits = g->nentries = g->ntops = g->ndata = 0;
  g->bytes = 0;
}

/* Empties the snapshot directory. */
static void wipe(struct guard *g) {
  int n;
  char **names = list_names(g->snapfd, &n);
  for (int k = 0; k < n; k++) unlinkat(g->snapfd, names[k], 0);
  free_names(names, n);
}

static int holds(const struct guard *g, const char *rel) {
  for (int i = 0; i < g->ntops; i++)
    if (strcmp(g->tops[i], rel) == 0) return 1;
  return 0;
}

void guard_prepare(struct guard *g, int state_fd, int fresh, FILE *report) {
  g->statefd = state_fd;
  if (mkdirat(state_fd, g->key, 0700) < 0 && errno != EEXIST)
    die("launch: cannot create the protected-path snapshot %s: %s", g->key, strerror(errno));
  g->snapfd = openat(state_fd, g->key, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (g->snapfd < 0) die("launch: cannot open the protected-path snapshot %s: %s", g->key, strerror(errno));
  int loaded = load(g);
  if (loaded && fresh) {
    /* Left by a launcher that was killed before it checked: its command's changes are undone first. */
    guard_check(g, report);
    loaded = 0;
  }
  if (!loaded) {
    clear(g);
    wipe(g);
    clock_gettime(CLOCK_REALTIME_COARSE, &g->taken); /* ctimes come from the same coarse clock */
  }
  int added = 0;
  for (int i = 0; i < g->npaths; i++) {
    if (holds(g, g->paths[i])) continue;
    snap_top(g, g->paths[i]);
    added = 1;
  }
  if (added || !loaded) save(g);
  link_entries(g);
}

void guard_discard(struct guard *g) {
  if (g->snapfd < 0) return;
  wipe(g);
  close(g->snapfd);
  g->snapfd = -1;
  unlinkat(g->statefd, g->key, AT_REMOVEDIR);
}
