/* A run being undone: its paths' parents and the conflicts met (undo-run.h). */
#define _GNU_SOURCE
#include "undo-run.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/paths.h"

static FILE *conflicts; /* the JSON array's items so far */
static char *conflicts_buf;
static size_t conflicts_len;
static int nconflicts;

static void json_string(FILE *f, const char *s) {
  fputc('"', f);
  for (const unsigned char *p = (const unsigned char *)s; *p != '\0'; p++) {
    if (*p == '"' || *p == '\\') fprintf(f, "\\%c", *p);
    else if (*p < 0x20 || *p == 0x7f) fprintf(f, "\\u%04x", *p);
    else fputc(*p, f);
  }
  fputc('"', f);
}

const char *undo_now_rel(const struct undo_entry *e) {
  return e->now_rel != NULL ? e->now_rel : e->rel;
}

void undo_json_path(FILE *f, const struct undo_run *r, const struct undo_entry *e, int now) {
  char path[8192];
  const char *rel = now ? undo_now_rel(e) : e->rel;
  snprintf(path, sizeof path, "%s%s%s", r->root_path[e->root], rel[0] == '\0' ? "" : "/", rel);
  json_string(f, path);
}

void undo_failed(const struct undo_run *r, const struct undo_entry *e, const char *why) {
  fprintf(conflicts, "%s{\"path\":", nconflicts++ ? "," : "");
  undo_json_path(conflicts, r, e, 1);
  fprintf(conflicts, ",\"reason\":");
  json_string(conflicts, why);
  fputc('}', conflicts);
}

static int parent_of(const struct undo_run *r, int root, const char *rel, const char **name) {
  const char *slash = strrchr(rel, '/');
  int fd = r->root_fd[root];
  if (fd < 0) return errno = ENOENT, -1;
  if (slash == NULL) {
    *name = rel;
    return fcntl(fd, F_DUPFD_CLOEXEC, 3);
  }
  char parent[4096];
  snprintf(parent, sizeof parent, "%.*s", (int)(slash - rel), rel);
  *name = slash + 1;
  return open_path(fd, parent, RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS);
}

int undo_parent(const struct undo_run *r, const struct undo_entry *e, const char **name) {
  return parent_of(r, e->root, e->rel, name);
}

/* Whether PATH is strictly beneath DIR. */
static int beneath(const char *path, const char *dir) {
  size_t n = strlen(dir);
  return strncmp(path, dir, n) == 0 && path[n] == '/';
}

int undo_parent_now(const struct undo_run *r, const struct undo_entry *e, const char **name) {
  const char *rel = undo_now_rel(e);
  /* Beneath an object parked since: there, under its temporary name. */
  const struct undo_entry *in = NULL;
  for (int i = 0; i < r->nparked; i++) {
    const struct undo_entry *q = r->parked[i];
    if (q->root == e->root && beneath(rel, undo_now_rel(q)) &&
        (in == NULL || strlen(undo_now_rel(q)) > strlen(undo_now_rel(in))))
      in = q;
  }
  if (in == NULL) return parent_of(r, e->root, rel, name);
  static char via[8192]; /* one path at a time, used at once by the caller */
  snprintf(via, sizeof via, "%s%s", in->parked, rel + strlen(undo_now_rel(in)));
  return parent_of(r, e->root, via, name);
}

void undo_conflicts_reset(void) {
  if (conflicts != NULL) fclose(conflicts);
  free(conflicts_buf);
  conflicts_buf = NULL;
  conflicts_len = 0;
  nconflicts = 0;
  conflicts = open_memstream(&conflicts_buf, &conflicts_len);
}

int undo_nconflicts(void) {
  return nconflicts;
}

const char *undo_conflicts_text(void) {
  fflush(conflicts);
  return conflicts_buf == NULL ? "" : conflicts_buf;
}
