/*
 * The change watcher's marks (watch-tree.h). Each directory is marked before it is listed, so an entry made
 * in it after the listing has an event, and one made before is in the listing. No directory is kept open
 * (a user's open-file limit is far below a large tree's directory count): each is known in a table
 * (watch-table.c) by its file handle, with its place, and opened again there when needed. The listing goes
 * through a queue worked off in slices between the watcher's other work. A directory that cannot be marked
 * (the user's mark limit, an unreadable directory, a mount below a root) leaves its root unvouched for: the
 * launcher walks it.
 */
#define _GNU_SOURCE
#include "watch-tree.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fanotify.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "watch-proto.h"
#include "watch-table.h"

#define TREE_EVENTS                                                                                      \
  (FAN_CREATE | FAN_DELETE | FAN_MOVED_FROM | FAN_MOVED_TO | FAN_ATTRIB | FAN_MODIFY | FAN_CLOSE_WRITE | \
   FAN_DELETE_SELF | FAN_MOVE_SELF | FAN_ONDIR | FAN_EVENT_ON_CHILD)

struct qitem {
  struct whandle parent;
  int root;
  char *name;
};

int watch_group = -1;
static struct qitem *queue;
static size_t qlen, qcap;

int watch_tree_init(void) {
  watch_group = fanotify_init(FAN_CLASS_NOTIF | FAN_REPORT_DFID_NAME_TARGET | FAN_NONBLOCK | FAN_CLOEXEC,
                              O_RDONLY | O_CLOEXEC | O_LARGEFILE);
  return watch_group;
}

static void enqueue(const struct whandle *parent, const char *name, int root) {
  if (qlen == qcap) {
    size_t cap = qcap == 0 ? 1024 : qcap * 2;
    struct qitem *q = realloc(queue, cap * sizeof *q);
    if (q == NULL) {
      wt_roots[root].state = WATCH_BROKEN;
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
    wt_roots[root].state = WATCH_BROKEN;
    return;
  }
  qlen++;
  wt_roots[root].queued++;
}

int watch_root(int rootfd) {
  struct stat st;
  if (fstat(rootfd, &st) < 0) {
    close(rootfd);
    return -1;
  }
  for (int i = 0; i < wt_nroots; i++)
    if (wt_roots[i].dev == st.st_dev && wt_roots[i].ino == st.st_ino) {
      close(rootfd);
      return i;
    }
  if (wt_nroots == WATCH_MAX_ROOTS) {
    close(rootfd);
    return -1;
  }
  struct wroot *r = &wt_roots[wt_nroots];
  *r = (struct wroot){.fd = rootfd, .dev = st.st_dev, .ino = st.st_ino, .mnt_id = wt_mount_id(rootfd)};
  if (watch_group < 0) r->state = WATCH_BROKEN;
  struct whandle none = {0};
  enqueue(&none, "", wt_nroots);
  return wt_nroots++;
}

int watch_root_state(int i) {
  if (wt_roots[i].state != WATCH_READY) return wt_roots[i].state;
  if (wt_unlocated()) return WATCH_SCANNING;
  return wt_roots[i].queued > 0 ? WATCH_SCANNING : WATCH_READY;
}

static int failed_state(int e) { return e == EMFILE || e == ENFILE || e == ENOSPC ? WATCH_TOO_MANY : WATCH_BROKEN; }

/* Lists directory FD (marked, known as D), queueing its subdirectories. */
static void list_dir(int fd, const struct wdir *d) {
  struct wroot *r = &wt_roots[d->root];
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
    int isdir = e->d_type == DT_DIR ||
                (e->d_type == DT_UNKNOWN && fstatat(dirfd(dir), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode));
    if (isdir) enqueue(&d->h, e->d_name, d->root);
    else if (strcmp(e->d_name, ".git") == 0) wt_note_gitfile(&d->h);
  }
  closedir(dir);
}

/* Directory FD (entry NAME of PARENT, or root ROOT itself), found there now: marked, known, and listed when
 * new to the table, back from AWAY or DELETED, or RELIST (children of it may be unmarked). Closes FD. */
static void adopt(int fd, const struct whandle *parent, const char *name, int root, int relist) {
  struct whandle h;
  struct wroot *r = &wt_roots[root];
  if (wt_handle_of(fd, &h) < 0 || wt_mount_id(fd) != r->mnt_id) {
    r->state = WATCH_BROKEN; /* no handle; or a mount below the root, whose changes the marks here miss */
    close(fd);
    return;
  }
  relist |= wt_unlocate(&h, 0); /* found where an event or a listing said */
  struct wdir *d = wt_find(&h);
  int known = d != NULL && d->gone == HERE;
  /* A mark needs a descriptor open for reading (FD may be O_PATH): an unreadable directory cannot be
   * marked, and its root is walked. */
  int rfd = known ? -1 : openat(fd, ".", O_RDONLY | O_DIRECTORY | O_NONBLOCK | O_CLOEXEC);
  if (!known && (rfd < 0 || fanotify_mark(watch_group, FAN_MARK_ADD, TREE_EVENTS, rfd, NULL) < 0)) {
    r->state = failed_state(errno);
    if (rfd >= 0) close(rfd);
    close(fd);
    return;
  }
  if (rfd >= 0) close(rfd);
  if (d == NULL && (d = wt_add(&h)) == NULL) {
    r->state = WATCH_BROKEN;
    close(fd);
    return;
  }
  char *copy = strdup(name);
  if (copy == NULL) r->state = WATCH_BROKEN;
  else {
    free(d->name);
    d->name = copy;
    d->parent = *parent;
    wt_set_gone(d, HERE, 0);
    d->root = root;
    if (!known || relist) list_dir(fd, d);
  }
  close(fd);
}

/* Marks and lists queued item Q. */
static void mark_one(struct qitem q) {
  wt_roots[q.root].queued--;
  int fd = -1;
  if (q.parent.len == 0) {
    fd = openat(wt_roots[q.root].fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) wt_roots[q.root].state = failed_state(errno);
  } else {
    struct wdir *p = wt_find(&q.parent);
    fd = p == NULL || p->gone != HERE ? -1 : wt_open_below(p, q.name);
    int e = errno;
    if (fd < 0 && p != NULL && p->gone != DELETED && !wt_where_said(p)) {
      /* Its parent is not where the table says (a move whose events are not read yet, or merged): it is
       * listed again once an event places it, else the next begin marks everything again. */
      wt_unlocate(&q.parent, 1);
    } else if (fd < 0 && p != NULL && p->gone == HERE && e != ENOENT && e != ENOTDIR && e != ELOOP) {
      wt_roots[q.root].state = failed_state(e);
    }
    /* Else it moved or went after its parent was listed: the events of that say where, if anywhere. */
  }
  if (fd >= 0) adopt(fd, &q.parent, q.name, q.root, 0);
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

/* An object an event of this drain named, not found where any of its events said (yet): looked for again
 * once the whole drain is read, when the places of the directories above are known too. */
#define PEND_PLACES 8

struct pend {
  struct whandle obj;
  struct whandle dirs[PEND_PLACES];
  char names[PEND_PLACES][256];
  int n, appeared;
  uint64_t seq;
};
static struct pend *pending;
static size_t npending, cpending;

/* Whether OBJ was found at one of P's places (then marked, placed, listed as adopt says). */
static int found_at(const struct whandle *dirs, char names[][256], int n, const struct whandle *obj) {
  for (int i = 0; i < n; i++) {
    struct wdir *p = names[i][0] == '\0' ? NULL : wt_find(&dirs[i]);
    int fd = p == NULL || p->gone != HERE ? -1 : wt_open_below(p, names[i]);
    struct whandle h;
    if (fd >= 0 && wt_handle_of(fd, &h) == 0 && wt_same(&h, obj)) {
      adopt(fd, &dirs[i], names[i], p->root, 0);
      return 1;
    }
    if (fd >= 0) close(fd);
  }
  return 0;
}

void watch_moved(const struct whandle *dirs, const char *const *names, int n, const struct whandle *obj, int appeared, uint64_t seq) {
  /* Events of one object merge (mkdir a, mv a b, mv b a: two events, neither in order), so none is taken at
   * its word: the object is looked for where each names it, and its place is what is found. */
  size_t k = 0;
  while (k < npending && !wt_same(&pending[k].obj, obj)) k++;
  if (k == npending) {
    if (npending == cpending) {
      size_t cap = cpending == 0 ? 64 : cpending * 2;
      struct pend *more = realloc(pending, cap * sizeof *more);
      if (more == NULL) {
        wt_unlocate(obj, 1); /* as good as unplaced: everything is marked again at the next begin */
        return;
      }
      pending = more;
      cpending = cap;
    }
    pending[npending++] = (struct pend){.obj = *obj};
  }
  /* Every place its events named is kept (the right one may be any of them, whatever their order). */
  struct pend *q = &pending[k];
  q->appeared |= appeared;
  q->seq = seq;
  for (int i = 0; i < n; i++) {
    if (names[i][0] == '\0') continue;
    int j = 0;
    while (j < q->n && !(wt_same(&q->dirs[j], &dirs[i]) && strcmp(q->names[j], names[i]) == 0)) j++;
    if (j < q->n) continue;
    if (q->n == PEND_PLACES) { /* more places than kept: shift out the oldest */
      memmove(&q->dirs[0], &q->dirs[1], sizeof q->dirs[0] * (PEND_PLACES - 1));
      memmove(&q->names[0], &q->names[1], sizeof q->names[0] * (PEND_PLACES - 1));
      q->n--;
    }
    q->dirs[q->n] = dirs[i];
    snprintf(q->names[q->n], sizeof q->names[q->n], "%s", names[i]);
    q->n++;
  }
  if (found_at(q->dirs, q->names, q->n, obj)) *q = pending[--npending];
}

void watch_settle(void) {
  /* Passes until none places anything: a directory placed lets those below it be placed. */
  for (int progress = 1; progress && npending > 0;) {
    progress = 0;
    for (size_t k = 0; k < npending;)
      if (found_at(pending[k].dirs, pending[k].names, pending[k].n, &pending[k].obj)) {
        pending[k] = pending[--npending];
        progress = 1;
      } else {
        k++;
      }
  }
  for (size_t k = 0; k < npending; k++) {
    struct wdir *d = wt_find(&pending[k].obj);
    if (d != NULL && d->gone == HERE && wt_where_said(d)) continue; /* still where the table has it */
    if (d != NULL && d->gone == HERE) {
      /* Its marks went with it. A later event, or the listing of where it went, places it; until then what
       * is below it cannot be vouched for (the next begin marks everything again, unless it is deleted by
       * then: what the check after a run set aside is). */
      wt_set_gone(d, AWAY, pending[k].seq);
    } else if (d == NULL && pending[k].appeared) {
      wt_unlocate(&pending[k].obj, 1); /* new, and moved on before it could be marked */
    }
  }
  npending = 0;
}

void watch_gone(const struct whandle *obj, uint64_t seq) {
  wt_unlocate(obj, 0);
  struct wdir *d = wt_find(obj);
  if (d == NULL || d->gone == DELETED) return;
  wt_set_gone(d, DELETED, seq);
}

int watch_open(const struct whandle *h) {
  struct wdir *d = wt_find(h);
  if (d == NULL) return errno = ENOENT, -1;
  if (d->gone) return errno = d->gone == DELETED ? ESTALE : ENOENT, -1; /* away: the caller walks */
  int fd = wt_open_below(d, NULL);
  if (fd < 0 && errno == ESTALE) return -1;
  struct whandle now;
  if (fd >= 0 && wt_handle_of(fd, &now) == 0 && wt_same(&now, h)) {
    int o = openat(fd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
    close(fd);
    return o;
  }
  if (fd >= 0) close(fd);
  return errno = ENOENT, -1; /* not where the events left it: the caller walks */
}

void watch_rebuild(void) {
  if (watch_group >= 0) fanotify_mark(watch_group, FAN_MARK_FLUSH, 0, AT_FDCWD, NULL);
  npending = 0;
  wt_clear();
  while (qlen > 0) free(queue[--qlen].name);
  struct whandle none = {0};
  for (int i = 0; i < wt_nroots; i++) {
    wt_roots[i].queued = 0;
    wt_roots[i].state = watch_group < 0 ? WATCH_BROKEN : WATCH_READY;
    enqueue(&none, "", i);
  }
}

int watch_unlocated(void) { return wt_unlocated(); }

void watch_tree_prune(uint64_t seq) { wt_prune(seq); }
