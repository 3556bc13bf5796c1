/*
 * Gitlinks (gitlinks.h). The index is parsed here, never by running git (the repository's configuration is
 * what a command may have planted): "DIRC", a version (2, 3 or 4), an entry count, then entries of stat
 * data, a mode, an object name (20 bytes for SHA-1, 32 for SHA-256: tried in that order, the parse must
 * account for every entry), flags (and extended flags in versions 3 and 4), and a path — NUL-terminated
 * and padded to 8 bytes in versions 2 and 3, prefix-compressed in version 4. .gitmodules is read for its
 * `path = …` lines. Each path is opened beneath the root without following a symlink (git refuses a
 * gitlink beyond one) and walked.
 */
#define _GNU_SOURCE
#include "gitlinks.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/paths.h"
#include "check-walk.h"

#define GITLINKS_MAX_FILE (512L * 1024 * 1024)

/* The whole file NAME beneath DIRFD (at most GITLINKS_MAX_FILE); NULL when it is not there or unreadable. */
static unsigned char *read_whole(int dirfd, const char *name, size_t *len) {
  int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > GITLINKS_MAX_FILE) {
    if (fd >= 0) close(fd);
    return NULL;
  }
  unsigned char *buf = malloc((size_t)st.st_size + 1);
  size_t done = 0;
  while (buf != NULL && done < (size_t)st.st_size) {
    ssize_t r = read(fd, buf + done, (size_t)st.st_size - done);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    done += (size_t)r;
  }
  close(fd);
  if (buf != NULL) buf[done] = '\0';
  *len = done;
  return buf;
}

static uint32_t be32(const unsigned char *p) { return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]; }

/* Walks the directory REL beneath root R when it is one. */
static void walk_gitlink(struct check *c, int r, const char *rel) {
  if (rel[0] == '\0' || rel[0] == '/') return;
  int fd = open_path(c->roots[r].fd, rel, RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
  struct stat st;
  int dir = fd >= 0 && fstat(fd, &st) == 0 && S_ISDIR(st.st_mode) ? openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
  if (dir >= 0) {
    char shown[4400];
    snprintf(shown, sizeof shown, "%s/%s", c->roots[r].path, rel);
    check_tree(c, r, dir, shown);
    close(dir);
  }
  if (fd >= 0) close(fd);
}

/* git's varint (prefix-compression of version 4): -1 when it runs past LEN or overflows. */
static long varint(const unsigned char *buf, size_t len, size_t *at) {
  if (*at >= len) return -1;
  unsigned char b = buf[(*at)++];
  unsigned long v = b & 127;
  while (b & 128) {
    if (*at >= len || ++v > (1UL << 24)) return -1;
    b = buf[(*at)++];
    v = (v << 7) + (b & 127);
  }
  return (long)v;
}

/* Parses index BUF (LEN bytes) with object names of HASH bytes; each gitlink's path walked when WALK. 0 when
 * every entry was accounted for, -1 otherwise. */
static int parse_index(struct check *c, int r, const unsigned char *buf, size_t len, size_t hash, int walk) {
  if (len < 12 || memcmp(buf, "DIRC", 4) != 0) return -1;
  uint32_t version = be32(buf + 4), count = be32(buf + 8);
  if (version < 2 || version > 4) return -1;
  size_t at = 12, fixed = 40 + hash + 2;
  char path[4096] = "";
  for (uint32_t i = 0; i < count; i++) {
    size_t start = at;
    if (at + fixed > len) return -1;
    uint32_t mode = be32(buf + at + 24);
    unsigned flags = (unsigned)buf[at + 40 + hash] << 8 | buf[at + 40 + hash + 1];
    size_t p = at + fixed + ((flags & 0x4000) != 0 && version >= 3 ? 2 : 0), keep = 0;
    if (version == 4) {
      long strip = varint(buf, len, &p);
      size_t had = strlen(path);
      if (strip < 0 || (size_t)strip > had) return -1;
      keep = had - (size_t)strip;
    }
    const unsigned char *end = p < len ? memchr(buf + p, '\0', len - p) : NULL;
    size_t raw = end == NULL ? 0 : (size_t)(end - (buf + p));
    if (end == NULL || keep + raw >= sizeof path) return -1;
    memcpy(path + keep, buf + p, raw + 1);
    if ((flags & 0xfff) != 0xfff && (flags & 0xfff) != keep + raw) return -1;
    /* Versions 2 and 3 pad an entry with 1 to 8 NULs to a multiple of 8 bytes. */
    at = version == 4 ? p + raw + 1 : start + (((p - start) + raw + 8) & ~(size_t)7);
    if (at > len) return -1;
    if (walk && (mode & 0170000) == 0160000) walk_gitlink(c, r, path);
  }
  /* Extensions, then the checksum (HASH bytes): what is left must hold at least the checksum. */
  return len - at >= hash ? 0 : -1;
}

/* Each `path = …` line of .gitmodules (BUF) walked. */
static void walk_gitmodules(struct check *c, int r, char *buf) {
  for (char *line = strtok(buf, "\n"); line != NULL; line = strtok(NULL, "\n")) {
    char *p = line + strspn(line, " \t");
    if (strncmp(p, "path", 4) != 0) continue;
    p += 4 + strspn(p + 4, " \t");
    if (*p != '=') continue;
    p += 1 + strspn(p + 1, " \t");
    size_t n = strcspn(p, "\r");
    while (n > 0 && (p[n - 1] == ' ' || p[n - 1] == '\t')) n--;
    p[n] = '\0';
    walk_gitlink(c, r, p);
  }
}

int check_gitlinks(struct check *c, int r) {
  int root = c->roots[r].fd;
  struct stat idx, mods;
  int index_changed = fstatat(root, ".git/index", &idx, AT_SYMLINK_NOFOLLOW) == 0 && changed_in_run(c, &idx);
  int modules_changed = fstatat(root, ".gitmodules", &mods, AT_SYMLINK_NOFOLLOW) == 0 && changed_in_run(c, &mods);
  if (!index_changed && !modules_changed) return 0;
  int git = openat(root, ".git", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  size_t len = 0;
  unsigned char *index = git < 0 ? NULL : read_whole(git, "index", &len);
  if (git >= 0) close(git);
  int rc = index_changed && index == NULL ? -1 : 0;
  if (index != NULL) {
    size_t hash = parse_index(c, r, index, len, 20, 0) == 0 ? 20 : parse_index(c, r, index, len, 32, 0) == 0 ? 32 : 0;
    rc = hash == 0 ? -1 : parse_index(c, r, index, len, hash, 1);
    free(index);
  }
  unsigned char *modules = read_whole(root, ".gitmodules", &len);
  if (modules != NULL) walk_gitmodules(c, r, (char *)modules);
  free(modules);
  return rc;
}
