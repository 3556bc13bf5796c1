/* Path states and their text form (state.h). */
#define _GNU_SOURCE
#include "state.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <unistd.h>

/* Where statx is missing (an old kernel, a filter): fstatat's fields in SX, with no birth time. */
static int fallback(int dirfd, const char *name, struct statx *sx) {
  struct stat st;
  if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW | (name[0] == '\0' ? AT_EMPTY_PATH : 0)) < 0) return -1;
  memset(sx, 0, sizeof *sx);
  sx->stx_mask = STATX_BASIC_STATS;
  sx->stx_mode = (unsigned short)st.st_mode;
  sx->stx_uid = st.st_uid;
  sx->stx_gid = st.st_gid;
  sx->stx_size = (unsigned long long)st.st_size;
  sx->stx_blocks = (unsigned long long)st.st_blocks;
  sx->stx_dev_major = major(st.st_dev);
  sx->stx_dev_minor = minor(st.st_dev);
  sx->stx_ino = st.st_ino;
  sx->stx_mtime.tv_sec = st.st_mtim.tv_sec;
  sx->stx_mtime.tv_nsec = (unsigned)st.st_mtim.tv_nsec;
  sx->stx_ctime.tv_sec = st.st_ctim.tv_sec;
  sx->stx_ctime.tv_nsec = (unsigned)st.st_ctim.tv_nsec;
  return 0;
}

void state_of(int dirfd, const char *name, struct path_state *s) {
  memset(s, 0, sizeof *s);
  struct statx sx;
  int flags = AT_SYMLINK_NOFOLLOW | AT_STATX_SYNC_AS_STAT | (name[0] == '\0' ? AT_EMPTY_PATH : 0);
  if (statx(dirfd, name, flags, STATX_BASIC_STATS | STATX_BTIME, &sx) < 0 && (errno != ENOSYS || fallback(dirfd, name, &sx) < 0)) {
    s->type = errno == ENOENT || errno == ENOTDIR ? '-' : '?';
    return;
  }
  mode_t m = sx.stx_mode;
  s->type = S_ISREG(m) ? 'f' : S_ISDIR(m) ? 'd' : S_ISLNK(m) ? 'l' : S_ISFIFO(m) ? 'p' : 'o';
  s->mode = m & 07777;
  s->uid = sx.stx_uid;
  s->gid = sx.stx_gid;
  s->size = (long long)sx.stx_size;
  s->blocks = (long long)sx.stx_blocks;
  s->dev = makedev(sx.stx_dev_major, sx.stx_dev_minor);
  s->ino = sx.stx_ino;
  s->msec = sx.stx_mtime.tv_sec;
  s->mnsec = sx.stx_mtime.tv_nsec;
  s->csec = sx.stx_ctime.tv_sec;
  s->cnsec = sx.stx_ctime.tv_nsec;
  /* Births only on a block device's filesystem (ext4, xfs): an anonymous device's may be overlayfs, where a
   * copy-up gives the same inode number a new birth; there the inode alone, as without births. */
  if ((sx.stx_mask & STATX_BTIME) && sx.stx_dev_major != 0) {
    s->bsec = sx.stx_btime.tv_sec;
    s->bnsec = sx.stx_btime.tv_nsec;
  }
  if (s->type == 'l') {
    char buf[PATH_MAX];
    ssize_t n = readlinkat(dirfd, name, buf, sizeof buf - 1);
    if (n >= 0) {
      buf[n] = '\0';
      s->target = strdup(buf);
    }
  }
}

static int birth_known(const struct path_state *s) { return s->bsec != 0 || s->bnsec != 0; }

int state_same_object(const struct path_state *a, const struct path_state *b) {
  if (a->type == '-' || a->type == '?' || a->type != b->type || a->ino != b->ino || a->dev != b->dev) return 0;
  return !birth_known(a) || !birth_known(b) || (a->bsec == b->bsec && a->bnsec == b->bnsec);
}

/* Whether A and B are the same state; with `ctime` 0 the change times are not compared (an undo puts
 * everything back but the change time). */
static int same_state(const struct path_state *a, const struct path_state *b, int ctime) {
  if (a->type != b->type) return 0;
  if (a->type == '-') return 1;
  if (a->type == '?') return 0;
  if (a->mode != b->mode || a->uid != b->uid || a->gid != b->gid || !state_same_object(a, b)) return 0;
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

void state_write_birth(FILE *f, const struct path_state *s) { fprintf(f, " @%lld.%09lld", s->bsec, s->bnsec); }

void state_read_birth(char **p, struct path_state *s) {
  int used = 0;
  long long sec, nsec;
  if (sscanf(*p, " @%lld.%lld%n", &sec, &nsec, &used) == 2 && used > 0) {
    s->bsec = sec;
    s->bnsec = nsec;
    *p += used;
  }
}
