/* Path states and their text form (state.h). */
#define _GNU_SOURCE
#include "state.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void state_of(int dirfd, const char *name, struct path_state *s) {
  memset(s, 0, sizeof *s);
  struct stat st;
  int flags = AT_SYMLINK_NOFOLLOW | (name[0] == '\0' ? AT_EMPTY_PATH : 0);
  if (fstatat(dirfd, name, &st, flags) < 0) {
    s->type = errno == ENOENT || errno == ENOTDIR ? '-' : '?';
    return;
  }
  s->type = S_ISREG(st.st_mode) ? 'f' : S_ISDIR(st.st_mode) ? 'd' : S_ISLNK(st.st_mode) ? 'l' : 'o';
  s->mode = st.st_mode & 07777;
  s->uid = st.st_uid;
  s->gid = st.st_gid;
  s->size = st.st_size;
  s->blocks = st.st_blocks;
  s->dev = st.st_dev;
  s->ino = st.st_ino;
  s->msec = st.st_mtim.tv_sec;
  s->mnsec = st.st_mtim.tv_nsec;
  s->csec = st.st_ctim.tv_sec;
  s->cnsec = st.st_ctim.tv_nsec;
  if (s->type == 'l') {
    char buf[PATH_MAX];
    ssize_t n = readlinkat(dirfd, name, buf, sizeof buf - 1);
    if (n >= 0) {
      buf[n] = '\0';
      s->target = strdup(buf);
    }
  }
}

/* Whether A and B are the same state; with `ctime` 0 the change times are not compared (an undo puts
 * everything back but the change time). */
static int same_state(const struct path_state *a, const struct path_state *b, int ctime) {
  if (a->type != b->type) return 0;
  if (a->type == '-') return 1;
  if (a->type == '?') return 0;
  if (a->mode != b->mode || a->uid != b->uid || a->gid != b->gid || a->ino != b->ino || a->dev != b->dev) return 0;
  if (a->type == 'd') return 1; /* a directory's entries are paths of their own */
  if (a->size != b->size || a->msec != b->msec || a->mnsec != b->mnsec) return 0;
  if (ctime && (a->csec != b->csec || a->cnsec != b->cnsec)) return 0;
  if (a->type == 'l') return a->target != NULL && b->target != NULL && strcmp(a->target, b->target) == 0;
  return 1;
}

int state_same(const struct path_state *a, const struct path_state *b) { return same_state(a, b, 1); }

int state_same_but_ctime(const struct path_state *a, const struct path_state *b) { return same_state(a, b, 0); }

void name_write(FILE *f, const char *s) {
  fputc(':', f);
  for (const unsigned char *p = (const unsigned char *)s; *p != '\0'; p++) {
    if (*p <= ' ' || *p == '%' || *p == 0x7f) fprintf(f, "%%%02X", *p);
    else fputc(*p, f);
  }
}

char *name_read(char **p) {
  char *s = *p;
  while (*s == ' ') s++;
  if (*s != ':') return NULL;
  s++;
  size_t n = strcspn(s, " \n");
  char *out = malloc(n + 1);
  if (out == NULL) return NULL;
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    if (s[i] == '%' && i + 2 < n) {
      char hex[3] = {s[i + 1], s[i + 2], 0};
      out[k++] = (char)strtol(hex, NULL, 16);
      i += 2;
    } else {
      out[k++] = s[i];
    }
  }
  out[k] = '\0';
  *p = s + n;
  return out;
}

void state_write(FILE *f, const struct path_state *s) {
  fprintf(f, " %c %o %u %u %lld %lld %llu %llu %lld %lld %lld %lld ", s->type, s->mode, s->uid, s->gid, s->size,
          s->blocks, s->dev, s->ino, s->msec, s->mnsec, s->csec, s->cnsec);
  name_write(f, s->target == NULL ? "" : s->target);
}

int state_read(char **p, struct path_state *s) {
  memset(s, 0, sizeof *s);
  int used = 0;
  if (sscanf(*p, " %c %o %u %u %lld %lld %llu %llu %lld %lld %lld %lld %n", &s->type, &s->mode, &s->uid, &s->gid,
             &s->size, &s->blocks, &s->dev, &s->ino, &s->msec, &s->mnsec, &s->csec, &s->cnsec, &used) < 12)
    return -1;
  *p += used;
  char *t = name_read(p);
  if (t == NULL) return -1;
  if (s->type == 'l') s->target = t;
  else free(t);
  return 0;
}
