/*
 * The guard's snapshot on disk (guard-manifest.h): `guard-DEV-INO.manifest` and `guard-DEV-INO.data` under
 * --state, written as sections a killed launcher cannot leave half-read, and read back by the next run.
 */
#define _GNU_SOURCE
#include "guard-manifest.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/errors.h"
#include "guard-snapshot.h"
#include "guard-tree.h"

/* ── The manifest: `aleph-guard 2 TAKEN_S TAKEN_NS`, then sections of R (a protected path the snapshot
 * holds), U (a unit) and E (an entry of the unit above) lines, each ending in `end`; paths %-escaped. ── */

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

void manifest_save(struct guard *g, int units, int tops, int fresh) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (f == NULL) die("out of memory");
  if (fresh) fprintf(f, "aleph-guard 2 %lld %ld\n", (long long)g->taken.tv_sec, g->taken.tv_nsec);
  for (int i = tops; i < g->ntops; i++) {
    fputs("R ", f);
    put_rel(f, g->tops[i]);
  }
  for (int i = units; i < g->nunits; i++) {
    const struct gunit *u = &g->units[i];
    fprintf(f, "U %c %d %d ", u->kind, u->present, u->kept);
    put_rel(f, u->rel);
    for (int k = u->first; k < u->first + u->count; k++) {
      const struct gentry *e = &g->entries[k];
      fprintf(f, "E %c %o %u %u %lld %llx %llx %lld %lld %lld %lld %lld ", e->type, e->mode, e->uid, e->gid, e->size,
              e->dev, e->ino, e->cs, e->cn, e->ms, e->mn, e->data);
      put_rel(f, e->rel);
    }
  }
  fputs("end\n", f);
  if (fclose(f) != 0) die("out of memory");
  struct stat st;
  int ok = fresh ? ftruncate(g->manifestfd, 0) == 0 : fstat(g->manifestfd, &st) == 0;
  if (!ok || pwrite_all(g->manifestfd, buf, len, fresh ? 0 : st.st_size) < 0)
    die("launch: cannot write the protected-path snapshot %s: %s", g->key, strerror(errno));
  free(buf);
}

static void clear(struct guard *g) {
  for (int i = 0; i < g->nunits; i++) free(g->units[i].rel);
  for (int k = 0; k < g->nentries; k++) free(g->entries[k].rel);
  for (int i = 0; i < g->ntops; i++) free(g->tops[i]);
  g->nunits = g->nentries = g->ntops = 0;
}

void manifest_wipe(struct guard *g) {
  clear(g);
  if (ftruncate(g->manifestfd, 0) < 0 || ftruncate(g->datafd, 0) < 0)
    die("launch: cannot empty the protected-path snapshot %s: %s", g->key, strerror(errno));
  g->datalen = 0;
}

int manifest_load(struct guard *g) {
  struct stat st;
  if (fstat(g->manifestfd, &st) < 0 || st.st_size == 0) return 0;
  char *text = malloc((size_t)st.st_size + 1);
  if (text == NULL) die("out of memory");
  ssize_t got = pread(g->manifestfd, text, (size_t)st.st_size, 0);
  text[got < 0 ? 0 : got] = '\0';
  long long ts, tn;
  int ok = got > 0 && sscanf(text, "aleph-guard 2 %lld %lld\n", &ts, &tn) == 2;
  g->taken.tv_sec = (time_t)ts;
  g->taken.tv_nsec = (long)tn;
  int whole = 0, units = 0, entries = 0, tops = 0, unit = -1;
  char *save_ptr = NULL, *body = ok ? strchr(text, '\n') : NULL;
  for (char *line = body != NULL ? strtok_r(body, "\n", &save_ptr) : NULL; ok && line != NULL;
       line = strtok_r(NULL, "\n", &save_ptr)) {
    int at = 0, present, kept;
    char kind;
    struct gentry e;
    if (strcmp(line, "end") == 0) {
      whole = 1;
      units = g->nunits, entries = g->nentries, tops = g->ntops;
    } else if (line[0] == 'R' && line[1] == ' ') {
      unescape(line + 2);
      if (g->ntops < GUARD_MAX_PATHS) g->tops[g->ntops++] = dup_str(line + 2);
    } else if (sscanf(line, "U %c %d %d %n", &kind, &present, &kept, &at) == 3 && at > 0) {
      unescape(line + at);
      unit = add_unit(g, kind, line + at);
      g->units[unit].present = present;
      g->units[unit].kept = kept;
    } else if (unit >= 0 && sscanf(line, "E %c %o %u %u %lld %llx %llx %lld %lld %lld %lld %lld %n", &e.type, &e.mode,
                                   &e.uid, &e.gid, &e.size, &e.dev, &e.ino, &e.cs, &e.cn, &e.ms, &e.mn, &e.data,
                                   &at) == 12 &&
               at > 0) {
      unescape(line + at);
      e.rel = line + at;
      add_entry(g, &e);
      g->units[unit].count++;
    } else {
      ok = 0;
    }
  }
  free(text);
  /* What follows the last `end` was cut short: dropped. */
  for (int i = units; i < g->nunits; i++) free(g->units[i].rel);
  for (int k = entries; k < g->nentries; k++) free(g->entries[k].rel);
  for (int i = tops; i < g->ntops; i++) free(g->tops[i]);
  g->nunits = units, g->nentries = entries, g->ntops = tops;
  if (!ok || !whole || body == NULL) {
    clear(g);
    return 0;
  }
  g->datalen = fstat(g->datafd, &st) == 0 ? st.st_size : 0;
  link_entries(g);
  return 1;
}

static int open_state(struct guard *g, int state_fd, const char *suffix) {
  char name[80];
  snprintf(name, sizeof name, "%s.%s", g->key, suffix);
  int fd = openat(state_fd, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) die("launch: cannot open the protected-path snapshot %s: %s", name, strerror(errno));
  return fd;
}

void manifest_open(struct guard *g, int state_fd) {
  g->manifestfd = open_state(g, state_fd, "manifest");
  g->datafd = open_state(g, state_fd, "data");
}

void manifest_remove(const struct guard *g, int state_fd) {
  char name[96];
  for (int k = 0; k < 2; k++) {
    snprintf(name, sizeof name, "%s%s", g->key, k == 0 ? ".manifest" : ".data");
    unlinkat(state_fd, name, 0);
  }
}
