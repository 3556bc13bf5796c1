/*
 * The complete walk (walk.h). Each directory is opened with openat(parent, name, O_RDONLY | O_DIRECTORY
 * | O_NOFOLLOW) and read whole with getdents64 before its entries are looked at, so the caller knows what
 * a directory holds (a git directory's markers) before it decides about any entry. At most WALK_FDS
 * descriptors are open: deeper, the shallowest is closed, and reopened on the way back with
 * openat(child, "..") — accepted only when it is the (dev, ino) recorded on the way down, else the tree
 * moved under the walk, which then stops and says so. A directory its listing names is opened before the
 * caller decides about it, and the caller is given that descriptor's stat. Memory: a listing buffer per
 * depth reached, kept from one directory to the next.
 */
#define _GNU_SOURCE
#include "walk.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

struct walk {
  struct walk_dir *dirs;
  int depth, cap, open;
  char *path; /* the current path, up to the deepest directory */
  size_t pcap;
  char *shown; /* walk_path's answer */
  size_t scap;
  int moved;
};

static int grow_buf(char **buf, size_t *cap, size_t need) {
  if (need <= *cap) return 0;
  size_t n = *cap == 0 ? 256 : *cap;
  while (n < need) n *= 2;
  char *p = realloc(*buf, n);
  if (p == NULL) return -1;
  *buf = p;
  *cap = n;
  return 0;
}

/* Reads directory FD whole into D->names (type byte, name, NUL; "." and ".." left out), a buffer kept
 * for its depth from one directory to the next. */
static int read_listing(int fd, struct walk_dir *d) {
  static char buf[1 << 16];
  d->nlen = d->next = 0;
  for (;;) {
    long n = syscall(SYS_getdents64, fd, buf, sizeof buf);
    if (n < 0) return -1;
    if (n == 0) return 0;
    for (long off = 0; off < n;) {
      struct dirent64 *e = (struct dirent64 *)(buf + off);
      off += e->d_reclen;
      const char *nm = e->d_name;
      if (nm[0] == '.' && (nm[1] == '\0' || (nm[1] == '.' && nm[2] == '\0'))) continue;
      size_t l = strlen(nm);
      if (grow_buf(&d->names, &d->ncap, d->nlen + l + 2) < 0) return -1;
      d->names[d->nlen] = (char)e->d_type;
      memcpy(d->names + d->nlen + 1, nm, l + 1);
      d->nlen += l + 2;
    }
  }
}

int walk_depth(struct walk *w, struct walk_dir *d) { return (int)(d - w->dirs); }

struct walk_dir *walk_at(struct walk *w, int depth) { return &w->dirs[depth]; }

struct walk_dir *walk_parent(struct walk *w, struct walk_dir *d) { return d == w->dirs ? NULL : d - 1; }

int walk_fd(struct walk *w, struct walk_dir *d) {
  if (d->fd >= 0) return d->fd;
  int at = walk_depth(w, d), j = at + 1;
  while (j <= w->depth && w->dirs[j].fd < 0) j++;
  if (j > w->depth) return -1;
  for (int i = j - 1; i >= at; i--) {
    int up = openat(w->dirs[i + 1].fd, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    struct stat st;
    if (up < 0 || fstat(up, &st) < 0 || st.st_dev != w->dirs[i].dev || st.st_ino != w->dirs[i].ino) {
      if (up >= 0) close(up);
      w->moved = 1;
      return -1;
    }
    w->dirs[i].fd = up;
    w->open++;
  }
  return d->fd;
}

const char *walk_path(struct walk *w, struct walk_dir *d, const char *name) {
  size_t nl = name == NULL ? 0 : strlen(name);
  if (grow_buf(&w->shown, &w->scap, d->plen + nl + 2) < 0) return "(out of memory)";
  memcpy(w->shown, w->path, d->plen);
  w->shown[d->plen] = '\0';
  if (name != NULL) {
    w->shown[d->plen] = '/';
    memcpy(w->shown + d->plen + 1, name, nl + 1);
  }
  return w->shown;
}

/* Pushes the directory FD (NAME in the current one) as the new deepest; -1 when out of memory. */
static int push(struct walk *w, int fd, const char *name, const struct stat *st) {
  if (w->depth + 1 >= w->cap) {
    int cap = w->cap == 0 ? 64 : w->cap * 2;
    struct walk_dir *p = realloc(w->dirs, (size_t)cap * sizeof *p);
    if (p == NULL) return -1;
    memset(p + w->cap, 0, (size_t)(cap - w->cap) * sizeof *p);
    w->dirs = p;
    w->cap = cap;
  }
  size_t plen = w->depth < 0 ? strlen(w->path) : w->dirs[w->depth].plen + 1 + strlen(name);
  if (w->depth >= 0) {
    if (grow_buf(&w->path, &w->pcap, plen + 1) < 0) return -1;
    size_t at = w->dirs[w->depth].plen;
    w->path[at] = '/';
    strcpy(w->path + at + 1, name);
  }
  struct walk_dir *d = &w->dirs[++w->depth];
  char *names = d->names; /* the listing buffer of this depth, kept */
  size_t ncap = d->ncap;
  memset(d, 0, sizeof *d);
  d->names = names;
  d->ncap = ncap;
  d->fd = fd;
  d->dev = st->st_dev;
  d->ino = st->st_ino;
  d->st = *st;
  d->name = name;
  d->plen = plen;
  if (++w->open > WALK_FDS) {
    for (int i = 0; i < w->depth; i++)
      if (w->dirs[i].fd >= 0) {
        close(w->dirs[i].fd);
        w->dirs[i].fd = -1;
        w->open--;
        break;
      }
  }
  return 0;
}

static void pop(struct walk *w, const struct walk_ops *ops, void *ctx) {
  struct walk_dir *d = &w->dirs[w->depth];
  struct walk_dir *p = walk_parent(w, d);
  if (p != NULL && walk_fd(w, p) < 0) w->moved = 1;
  if (ops->leave != NULL && !w->moved) ops->leave(w, d, p, ctx);
  if (d->fd >= 0) {
    close(d->fd);
    w->open--;
  }
  w->depth--;
  if (w->depth >= 0) w->path[w->dirs[w->depth].plen] = '\0';
}

/* Reads the directory C (NAME of D, ST its fstat) and enters it. */
static void enter_opened(struct walk *w, int c, const char *name, const struct stat *st, const struct walk_ops *ops,
                         void *ctx) {
  if (push(w, c, name, st) < 0) {
    close(c);
    w->moved = 1;
    return;
  }
  struct walk_dir *in = &w->dirs[w->depth];
  if (read_listing(c, in) < 0) {
    int e = errno;
    pop(w, &(struct walk_ops){0}, NULL);
    if (ops->unreadable != NULL) ops->unreadable(w, &w->dirs[w->depth], name, e, ctx);
    return;
  }
  if (ops->enter != NULL) ops->enter(w, in, ctx);
}

/* Opens and reads the directory NAME of D (the entry callback asked to descend), entering it. */
static void descend(struct walk *w, struct walk_dir *d, const char *name, const struct walk_ops *ops, void *ctx) {
  int c = openat(d->fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  struct stat st;
  if (c >= 0 && fstat(c, &st) < 0) {
    close(c);
    c = -1;
  }
  if (c < 0) {
    if (errno != ENOENT && ops->unreadable != NULL) ops->unreadable(w, d, name, errno, ctx);
    return;
  }
  enter_opened(w, c, name, &st, ops, ctx);
}

/* The entry NAME of D that its listing says is a directory: opened first, and its stat taken from that
 * descriptor (the inode the walk enters is the one the caller decided on, with one stat fewer). 0 when it
 * could not be opened as a directory (gone, replaced, unreadable): the caller then looks at it by name. */
static int listed_dir(struct walk *w, struct walk_dir *d, const char *name, const struct walk_ops *ops, void *ctx) {
  int c = openat(d->fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  struct stat st;
  if (c < 0) return 0;
  if (fstat(c, &st) < 0) {
    close(c);
    return 0;
  }
  if (ops->entry(w, d, name, &st, 0, ctx)) enter_opened(w, c, name, &st, ops, ctx);
  else close(c);
  return 1;
}

int walk_tree(int dirfd, const char *path, const long *data, const struct walk_ops *ops, void *ctx) {
  struct walk w = {.depth = -1};
  int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) < 0 || grow_buf(&w.path, &w.pcap, strlen(path) + 1) < 0) {
    if (fd >= 0) close(fd);
    return -1;
  }
  strcpy(w.path, path);
  if (push(&w, fd, "", &st) < 0 || read_listing(fd, &w.dirs[0]) < 0) {
    close(fd);
    for (int i = 0; i < w.cap; i++) free(w.dirs[i].names);
    free(w.dirs);
    free(w.path);
    return -1;
  }
  if (data != NULL) memcpy(w.dirs[0].data, data, sizeof w.dirs[0].data);
  if (ops->enter != NULL) ops->enter(&w, &w.dirs[0], ctx);
  while (w.depth >= 0 && !w.moved) {
    struct walk_dir *d = &w.dirs[w.depth];
    if (d->next >= d->nlen) {
      pop(&w, ops, ctx);
      continue;
    }
    const char *name = d->names + d->next + 1;
    int listed_as_dir = (unsigned char)d->names[d->next] == DT_DIR;
    d->next += strlen(name) + 2;
    if (walk_fd(&w, d) < 0) break;
    if (listed_as_dir && listed_dir(&w, d, name, ops, ctx)) continue;
    struct stat est;
    int ok = fstatat(d->fd, name, &est, AT_SYMLINK_NOFOLLOW) == 0;
    if (!ok && errno == ENOENT) continue;
    if (ops->entry(&w, d, name, ok ? &est : NULL, ok ? 0 : errno, ctx) && ok && S_ISDIR(est.st_mode))
      descend(&w, d, name, ops, ctx);
  }
  int moved = w.moved;
  while (w.depth >= 0) pop(&w, &(struct walk_ops){0}, NULL);
  for (int i = 0; i < w.cap; i++) free(w.dirs[i].names);
  free(w.dirs);
  free(w.path);
  free(w.shown);
  return moved ? -1 : 0;
}
