/*
 * The change watcher's marks (watch-tree.h). Each directory is marked before it is listed, so an entry made
 * in it after the listing has an event, and one made before is in the listing. No directory is kept open
 * (a user's open-file limit is far below a large tree's directory count): each is known in a table by its
 * file handle, with its parent's handle and its name, kept as the events move it, and opened again when
 * needed beneath its root on descriptors (no symlink followed, same mount), its handle compared with the
 * one it should have. The listing goes through a queue worked off in slices between the watcher's other
 * work. A directory that cannot be marked (the user's mark limit, an unreadable directory, a mount below a
 * root) leaves its root unvouched for: the launcher walks it.
 */
#define _GNU_SOURCE
#include "watch-tree.h"

#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fanotify.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "../common/paths.h"
#include "watch-proto.h"

#define TREE_SLOTS (1 << 16)
#define TREE_EVENTS                                                                                      \
  (FAN_CREATE | FAN_DELETE | FAN_MOVED_FROM | FAN_MOVED_TO | FAN_ATTRIB | FAN_MODIFY | FAN_CLOSE_WRITE | \
   FAN_DELETE_SELF | FAN_MOVE_SELF | FAN_ONDIR | FAN_EVENT_ON_CHILD)
#define UNLOCATED_MAX 4096

struct wdir {
  struct wdir *next;
  int gone;
  int root;
  uint64_t gone_seq;
  struct whandle h;
  struct whandle parent; /* len 0: the root itself */
  char *name;
};

struct wroot {
  int fd;
  dev_t dev;
  ino_t ino;
  uint64_t mnt_id;
  int state;   /* WATCH_READY, or why not for good (WATCH_TOO_MANY, WATCH_BROKEN) */
  long queued; /* its directories waiting in the queue */
};

/* A directory to mark: entry NAME of the marked directory PARENT (len 0: root ROOT itself). */
struct qitem {
  struct whandle parent;
  int root;
  char *name;
};

int watch_group = -1;
static struct wdir *slots[TREE_SLOTS];
static struct wroot roots[WATCH_MAX_ROOTS];
static int nroots;
static struct qitem *queue;
static size_t qlen, qcap;
static struct whandle unlocated[UNLOCATED_MAX];
static int nunlocated, unlocated_lost;

int watch_tree_init(void) {
  watch_group = fanotify_init(FAN_CLASS_NOTIF | FAN_REPORT_DFID_NAME_TARGET | FAN_NONBLOCK | FAN_CLOEXEC,
                              O_RDONLY | O_CLOEXEC | O_LARGEFILE);
  return watch_group;
}

static unsigned long hash_of(const struct whandle *h) {
  unsigned long x = 14695981039346656037ul ^ h->fsid;
  for (unsigned i = 0; i < h->len; i++) x = (x ^ h->fh[i]) * 1099511628211ul;
  return x % TREE_SLOTS;
}

static int same(const struct whandle *a, const struct whandle *b) {
  return a->fsid == b->fsid && a->len == b->len && memcmp(a->fh, b->fh, a->len) == 0;
}

static struct wdir *find(const struct whandle *h) {
  for (struct wdir *d = slots[hash_of(h)]; d != NULL; d = d->next)
    if (same(&d->h, h)) return d;
  return NULL;
}

/* The handle of directory FD into H; -1 when it has none. */
static int handle_of(int fd, struct whandle *h) {
  struct file_handle *fh = (struct file_handle *)h->fh;
  struct statfs sf;
  int mnt;
  fh->handle_bytes = WATCH_HANDLE_MAX;
  if (fstatfs(fd, &sf) < 0 || name_to_handle_at(fd, "", fh, &mnt, AT_EMPTY_PATH) < 0) return -1;
  memcpy(&h->fsid, &sf.f_fsid, sizeof h->fsid);
  h->len = (unsigned)sizeof *fh + fh->handle_bytes;
  return 0;
}

static uint64_t mount_id(int fd) {
  struct statx sx;
  if (statx(fd, "", AT_EMPTY_PATH, STATX_MNT_ID, &sx) < 0 || !(sx.stx_mask & STATX_MNT_ID)) return 0;
  return sx.stx_mnt_id;
}

/* The path of marked directory D beneath its root into OUT ("." for the root); -1 with errno: ESTALE when
 * it or a directory above it is gone (deleted, or moved out of the marked tree), ENOENT when one is not
 * known, ENAMETOOLONG. */
static int path_of(const struct wdir *d, char *out, size_t size, int *root) {
  size_t at = size - 1;
  out[at] = '\0';
  for (int hops = 0; d != NULL && d->parent.len != 0; hops++) {
    size_t n = strlen(d->name);
    if (d->gone) return errno = ESTALE, -1;
    if (hops > 4096 || at < n + 2) return errno = ENAMETOOLONG, -1;
    at -= n;
    memcpy(out + at, d->name, n);
    out[--at] = '/';
    d = find(&d->parent);
  }
  if (d == NULL || d->gone) return errno = d == NULL ? ENOENT : ESTALE, -1;
  *root = d->root; /* the root it lies beneath now */
  out[--at] = '.';
  memmove(out, out + at, size - at);
  return 0;
}

/* Directory NAME of marked directory P (or P itself when NAME is NULL), opened O_RDONLY beneath P's root
 * with no symlink on the way; -1 with errno. */
static int open_below(const struct wdir *p, const char *name) {
  static char path[PATH_MAX + 256];
  int root;
  if (path_of(p, path, sizeof path, &root) < 0) return -1;
  size_t n = strlen(path);
  if (name != NULL && n + 1 + strlen(name) + 1 > sizeof path) return errno = ENAMETOOLONG, -1;
  if (name != NULL) snprintf(path + n, sizeof path - n, "/%s", name);
  int o = open_path_nolink(roots[root].fd, path, RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS);
  if (o < 0) return -1;
  int fd = openat(o, ".", O_RDONLY | O_DIRECTORY | O_NONBLOCK | O_CLOEXEC);
  int e = errno;
  close(o);
  return errno = e, fd;
}

static void enqueue(const struct whandle *parent, const char *name, int root) {
  if (qlen == qcap) {
    size_t cap = qcap == 0 ? 1024 : qcap * 2;
    struct qitem *q = realloc(queue, cap * sizeof *q);
    if (q == NULL) {
      roots[root].state = WATCH_BROKEN;
      return;
    }
    queue = q;
    qcap = cap;
  }
  struct qitem *q = &queue[qlen];
  q->parent = *parent;
  q->root = root;
  q->name = strdup(name);
  if (q->name == NULL) {
    roots[root].state = WATCH_BROKEN;
    return;
  }
  qlen++;
  roots[root].queued++;
}

int watch_root(int rootfd) {
  struct stat st;
  if (fstat(rootfd, &st) < 0) {
    close(rootfd);
    return -1;
  }
  for (int i = 0; i < nroots; i++)
    if (roots[i].dev == st.st_dev && roots[i].ino == st.st_ino) {
      close(rootfd);
      return i;
    }
  if (nroots == WATCH_MAX_ROOTS) {
    close(rootfd);
    return -1;
  }
  struct wroot *r = &roots[nroots];
  *r = (struct wroot){.fd = rootfd, .dev = st.st_dev, .ino = st.st_ino, .mnt_id = mount_id(rootfd)};
  if (watch_group < 0) r->state = WATCH_BROKEN;
  struct whandle none = {0};
  enqueue(&none, "", nroots);
  return nroots++;
}

int watch_root_state(int i) {
  if (roots[i].state != WATCH_READY) return roots[i].state;
  if (nunlocated > 0 || unlocated_lost) return WATCH_SCANNING;
  return roots[i].queued > 0 ? WATCH_SCANNING : WATCH_READY;
}

static int failed_state(int e) { return e == EMFILE || e == ENFILE || e == ENOSPC ? WATCH_TOO_MANY : WATCH_BROKEN; }

/* Lists directory FD (marked, known as D), queueing its subdirectories. */
static void list_dir(int fd, const struct wdir *d) {
  struct wroot *r = &roots[d->root];
  int lfd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  DIR *dir = lfd < 0 ? NULL : fdopendir(lfd);
  if (dir == NULL) {
    if (lfd >= 0) close(lfd);
    r->state = failed_state(errno);
    return;
  }
  struct dirent *e;
  while ((e = readdir(dir)) != NULL) {
    if (e->d_name[0] == '.' && (e->d_name[1] == '\0' || (e->d_name[1] == '.' && e->d_name[2] == '\0'))) continue;
    struct stat st;
    if (e->d_type == DT_UNKNOWN && (fstatat(dirfd(dir), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode))) continue;
    if (e->d_type == DT_DIR || e->d_type == DT_UNKNOWN) enqueue(&d->h, e->d_name, d->root);
  }
  closedir(dir);
}

static void unlocate(const struct whandle *obj, int add) {
  for (int i = 0; i < nunlocated; i++)
    if (same(&unlocated[i], obj)) {
      if (!add) unlocated[i] = unlocated[--nunlocated];
      return;
    }
  if (!add) return;
  if (nunlocated == UNLOCATED_MAX) unlocated_lost = 1;
  else unlocated[nunlocated++] = *obj;
}

/* Directory FD (entry NAME of PARENT, or root ROOT itself), now found: marked, known, listed. Closes FD. */
static void adopt(int fd, const struct whandle *parent, const char *name, int root) {
  struct whandle h;
  struct wroot *r = &roots[root];
  if (handle_of(fd, &h) < 0 || mount_id(fd) != r->mnt_id) {
    r->state = WATCH_BROKEN; /* no handle; or a mount below the root, whose changes the marks here miss */
    close(fd);
    return;
  }
  unlocate(&h, 0); /* found by a listing (moved into a directory not yet marked) */
  struct wdir *d = find(&h);
  if (d != NULL && !d->gone) { /* met twice (moved while queued) */
    close(fd);
    return;
  }
  if (fanotify_mark(watch_group, FAN_MARK_ADD, TREE_EVENTS, fd, NULL) < 0) {
    r->state = failed_state(errno);
    close(fd);
    return;
  }
  if (d == NULL) {
    d = calloc(1, sizeof *d);
    if (d == NULL) {
      r->state = WATCH_BROKEN;
      close(fd);
      return;
    }
    d->h = h;
    unsigned long s = hash_of(&h);
    d->next = slots[s];
    slots[s] = d;
  }
  free(d->name);
  d->name = strdup(name);
  d->parent = *parent;
  d->gone = 0;
  d->root = root;
  if (d->name == NULL) r->state = WATCH_BROKEN;
  else list_dir(fd, d);
  close(fd);
}

/* Marks and lists queued item Q. */
static void mark_one(struct qitem q) {
  roots[q.root].queued--;
  int fd = -1;
  if (q.parent.len == 0) {
    fd = openat(roots[q.root].fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) roots[q.root].state = failed_state(errno);
  } else {
    struct wdir *p = find(&q.parent);
    /* A parent gone, or the entry moved or gone: the events that say so place it, if anywhere. */
    fd = p == NULL || p->gone ? -1 : open_below(p, q.name);
    if (fd < 0 && errno != ENOENT && errno != ENOTDIR && errno != ELOOP) roots[q.root].state = failed_state(errno);
  }
  if (fd >= 0) adopt(fd, &q.parent, q.name, q.root);
  free(q.name);
}

static long now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1000000L + t.tv_nsec / 1000;
}

int watch_scan(long budget_us) {
  long until = now_us() + budget_us;
  int n = 0;
  while (qlen > 0) {
    struct qitem q = queue[--qlen];
    mark_one(q);
    if (budget_us > 0 && (++n & 63) == 0 && now_us() >= until) break;
  }
  return qlen > 0;
}

void watch_appeared(const struct whandle *parent, const char *name, const struct whandle *obj) {
  struct wdir *p = find(parent), *known = find(obj);
  if (known != NULL && p != NULL && !p->gone) {
    /* Moved between marked directories (or back into them: only a move reaches a known directory that
     * went, a deleted one cannot come back); its marks, and those below it, went with it. */
    free(known->name);
    known->name = strdup(name);
    known->parent = *parent;
    known->gone = 0;
    unlocate(obj, 0);
    if (known->name == NULL) roots[known->root].state = WATCH_BROKEN;
    return;
  }
  int fd = p == NULL || p->gone ? -1 : open_below(p, name);
  struct whandle h;
  if (fd >= 0 && handle_of(fd, &h) == 0 && same(&h, obj)) {
    unlocate(obj, 0);
    adopt(fd, parent, name, p->root);
    return;
  }
  if (fd >= 0) close(fd);
  unlocate(obj, 1); /* moved on already: a later event places it */
}

void watch_gone(const struct whandle *obj, uint64_t seq) {
  unlocate(obj, 0);
  struct wdir *d = find(obj);
  if (d == NULL || d->gone) return;
  d->gone = 1;
  d->gone_seq = seq;
}

int watch_open(const struct whandle *h) {
  struct wdir *d = find(h);
  if (d == NULL) return errno = ENOENT, -1;
  if (d->gone) return errno = ESTALE, -1;
  int fd = open_below(d, NULL);
  if (fd < 0 && errno == ESTALE) return -1;
  struct whandle now;
  if (fd >= 0 && handle_of(fd, &now) == 0 && same(&now, h)) {
    int o = openat(fd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
    close(fd);
    return o;
  }
  if (fd >= 0) close(fd);
  return errno = ENOENT, -1; /* not where the events left it: the caller walks */
}

void watch_rebuild(void) {
  if (watch_group >= 0) fanotify_mark(watch_group, FAN_MARK_FLUSH, 0, AT_FDCWD, NULL);
  for (int s = 0; s < TREE_SLOTS; s++)
    while (slots[s] != NULL) {
      struct wdir *d = slots[s];
      slots[s] = d->next;
      free(d->name);
      free(d);
    }
  while (qlen > 0) free(queue[--qlen].name);
  nunlocated = 0;
  unlocated_lost = 0;
  struct whandle none = {0};
  for (int i = 0; i < nroots; i++) {
    roots[i].queued = 0;
    roots[i].state = watch_group < 0 ? WATCH_BROKEN : WATCH_READY;
    enqueue(&none, "", i);
  }
}

void watch_tree_prune(uint64_t seq) {
  for (int s = 0; s < TREE_SLOTS; s++)
    for (struct wdir **p = &slots[s]; *p != NULL;) {
      struct wdir *d = *p;
      if (d->gone && d->gone_seq <= seq) {
        *p = d->next;
        free(d->name);
        free(d);
      } else {
        p = &d->next;
      }
    }
}

int watch_unlocated(void) { return nunlocated > 0 || unlocated_lost; }
