/*
 * The known git directories of a root (registry.h). A directory is known by its file handle (inode and
 * generation: a new directory that reuses the inode number is not the one known) and device. The file,
 * `gitdirs-DEV-INO` under --state:
 *   aleph-gitdirs 1
 *   DEV SINCE_S SINCE_NS HANDLE_TYPE HANDLE_HEX    (one per git directory)
 *   end
 * is read and written under its lock (flock); a file without its `end` (a writer killed) reads as empty,
 * which makes the next check a complete walk. It is written only when what is known changed.
 */
#define _GNU_SOURCE
#include "registry.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

struct list {
  struct registry_entry *e;
  int n, cap;
};

struct registry {
  int fd; /* the file, -1 without --state */
  struct list loaded, noted, dropped;
  int dirty;
  int found; /* the file held a whole registry when opened */
};

static int add(struct list *l, const struct registry_entry *e) {
  if (l->n == l->cap) {
    int cap = l->cap == 0 ? 16 : l->cap * 2;
    struct registry_entry *p = realloc(l->e, (size_t)cap * sizeof *p);
    if (p == NULL) return -1;
    l->e = p;
    l->cap = cap;
  }
  l->e[l->n++] = *e;
  return 0;
}

static size_t handle_size(const struct registry_entry *e) {
  return sizeof(struct file_handle) + ((const struct file_handle *)e->handle)->handle_bytes;
}

static struct registry_entry *lookup(const struct list *l, const struct registry_entry *k) {
  for (int i = 0; i < l->n; i++)
    if (l->e[i].dev == k->dev && memcmp(l->e[i].handle, k->handle, handle_size(k)) == 0) return &l->e[i];
  return NULL;
}

/* Reads the file into L (cleared first); 0 when it was whole. */
static int read_file(int fd, struct list *l) {
  l->n = 0;
  FILE *f = fdopen(dup(fd), "r");
  if (f == NULL) return -1;
  rewind(f);
  char line[400];
  int whole = 0, ok = fgets(line, sizeof line, f) != NULL && strcmp(line, "aleph-gitdirs 1\n") == 0;
  while (ok && !whole && fgets(line, sizeof line, f) != NULL) {
    struct registry_entry e = {0};
    struct file_handle *h = (struct file_handle *)e.handle;
    unsigned long long dev;
    long long s, ns;
    int type, at = 0;
    char hex[300];
    if (strcmp(line, "end\n") == 0) whole = 1;
    else if (sscanf(line, "%llu %lld %lld %d %299s%n", &dev, &s, &ns, &type, hex, &at) == 5 && strlen(hex) % 2 == 0 &&
             strlen(hex) / 2 <= 128) {
      e.dev = (dev_t)dev;
      e.since = (struct timespec){.tv_sec = (time_t)s, .tv_nsec = (long)ns};
      h->handle_type = type;
      h->handle_bytes = (unsigned)(strlen(hex) / 2);
      for (unsigned i = 0; i < h->handle_bytes; i++) sscanf(hex + 2 * i, "%2hhx", &h->f_handle[i]);
      ok = add(l, &e) == 0;
    } else ok = 0;
  }
  fclose(f);
  if (!whole) l->n = 0;
  return whole ? 0 : -1;
}

struct registry *registry_open(int state_fd, const struct stat *root_st, int *found) {
  return registry_open_named(state_fd, "gitdirs", root_st, found);
}

struct registry *registry_open_named(int state_fd, const char *kind, const struct stat *root_st, int *found) {
  struct registry *g = calloc(1, sizeof *g);
  *found = 0;
  if (g == NULL) return NULL;
  g->fd = -1;
  if (state_fd < 0) return g;
  char name[64];
  snprintf(name, sizeof name, "%s-%llx-%llx", kind, (unsigned long long)root_st->st_dev,
           (unsigned long long)root_st->st_ino);
  g->fd = openat(state_fd, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (g->fd < 0) return g;
  flock(g->fd, LOCK_SH);
  *found = g->found = read_file(g->fd, &g->loaded) == 0;
  flock(g->fd, LOCK_UN);
  return g;
}

static int key_of(int fd, const struct stat *st, struct registry_entry *k) {
  memset(k, 0, sizeof *k);
  struct file_handle *h = (struct file_handle *)k->handle;
  h->handle_bytes = 128;
  int mount_id;
  k->dev = st->st_dev;
  return name_to_handle_at(fd, "", h, &mount_id, AT_EMPTY_PATH);
}

static int before(const struct timespec *a, const struct timespec *b) {
  return a->tv_sec < b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec < b->tv_nsec);
}

int registry_known(struct registry *g, int fd, const struct stat *st, const struct timespec *start) {
  struct registry_entry k;
  if (g == NULL || key_of(fd, st, &k) < 0) return 0;
  /* Known from the file, or noted by the walk that found the git directories before the run. */
  const struct registry_entry *e = lookup(&g->loaded, &k);
  if (e == NULL) e = lookup(&g->noted, &k);
  return e != NULL && before(&e->since, start);
}

void registry_note(struct registry *g, int fd, const struct stat *st, const struct timespec *since) {
  struct registry_entry k;
  if (g == NULL || key_of(fd, st, &k) < 0 || lookup(&g->noted, &k) != NULL) return;
  const struct registry_entry *known = lookup(&g->loaded, &k);
  k.since = known != NULL ? known->since : *since;
  if (known == NULL) g->dirty = 1;
  add(&g->noted, &k);
}

void registry_drop(struct registry *g, const struct registry_entry *entry) {
  if (g == NULL || lookup(&g->dropped, entry) != NULL) return;
  add(&g->dropped, entry);
  g->dirty = 1;
}

const struct registry_entry *registry_entries(const struct registry *g, int *n) {
  *n = g == NULL ? 0 : g->loaded.n;
  return g == NULL ? NULL : g->loaded.e;
}

const struct registry_entry *registry_noted(const struct registry *g, int *n) {
  *n = g == NULL ? 0 : g->noted.n;
  return g == NULL ? NULL : g->noted.e;
}

static void write_file(int fd, const struct list *l) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (f == NULL) return;
  fputs("aleph-gitdirs 1\n", f);
  for (int i = 0; i < l->n; i++) {
    const struct file_handle *h = (const struct file_handle *)l->e[i].handle;
    fprintf(f, "%llu %lld %ld %d ", (unsigned long long)l->e[i].dev, (long long)l->e[i].since.tv_sec,
            l->e[i].since.tv_nsec, h->handle_type);
    for (unsigned k = 0; k < h->handle_bytes; k++) fprintf(f, "%02x", h->f_handle[k]);
    fputc('\n', f);
  }
  fputs("end\n", f);
  if (fclose(f) == 0 && ftruncate(fd, 0) == 0) {
    for (size_t off = 0; off < len;) {
      ssize_t w = pwrite(fd, buf + off, len - off, (off_t)off);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) break;
      off += (size_t)w;
    }
  }
  free(buf);
}

void registry_save(struct registry *g, int complete) {
  if (g == NULL || g->fd < 0) return;
  /* A complete walk that found no git directory still leaves a whole (empty) registry: without it every
   * run would walk the root again before it starts. */
  if (complete && !g->found) g->dirty = 1;
  if (complete)
    for (int i = 0; !g->dirty && i < g->loaded.n; i++)
      if (lookup(&g->noted, &g->loaded.e[i]) == NULL) g->dirty = 1;
  if (!g->dirty) return;
  flock(g->fd, LOCK_EX);
  struct list now = {0}, out = {0};
  read_file(g->fd, &now);
  for (int i = 0; i < now.n; i++) {
    int dropped = lookup(&g->dropped, &now.e[i]) != NULL ||
                  (complete && lookup(&g->loaded, &now.e[i]) != NULL && lookup(&g->noted, &now.e[i]) == NULL);
    if (!dropped) add(&out, &now.e[i]);
  }
  for (int i = 0; i < g->noted.n; i++)
    if (lookup(&out, &g->noted.e[i]) == NULL) add(&out, &g->noted.e[i]);
  write_file(g->fd, &out);
  flock(g->fd, LOCK_UN);
  free(now.e);
  free(out.e);
}

void registry_free(struct registry *g) {
  if (g == NULL) return;
  if (g->fd >= 0) close(g->fd);
  free(g->loaded.e);
  free(g->noted.e);
  free(g->dropped.e);
  free(g);
}
