/*
 * The change journal (journal.h). One group per run: FAN_CLASS_NOTIF | FAN_REPORT_DFID_NAME_TARGET (each
 * event names the directory by handle and the entry by name, and the object by its own handle) |
 * FAN_UNLIMITED_QUEUE (nothing lost to a count limit; an allocation failure queues FAN_Q_OVERFLOW
 * instead) | FAN_NONBLOCK, with a FAN_MARK_FILESYSTEM mark per filesystem holding a root: a filesystem
 * mark sees every change made through any mount of the superblock, the run's idmapped clones included,
 * synchronously with the syscall that made it (fsnotify is called inside vfs_create, vfs_rename,
 * notify_change, …). So once every process of the run is gone, draining to EAGAIN has every event of the
 * run. Events of other processes on the same filesystem are in it too; the check keeps what lies beneath a
 * root. Entries are de-duplicated as they are read (a hash of directory handle and name).
 */
#define _GNU_SOURCE
#include "journal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fanotify.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "watch-client.h"

#define JOURNAL_SLOTS (1 << 14)
#define JOURNAL_EVENTS                                                                                  \
  (FAN_CREATE | FAN_DELETE | FAN_MOVED_FROM | FAN_MOVED_TO | FAN_ATTRIB | FAN_MODIFY | FAN_CLOSE_WRITE | \
   FAN_ONDIR | FAN_DELETE_SELF | FAN_MOVE_SELF)

struct journal_log {
  int fd;
  int watch; /* the change watcher's connection (an unprivileged host), or -1 */
  uint64_t token;
  int nfs;
  struct {
    fsid_t fsid;
    int mount_fd;
  } fs[JOURNAL_MAX_FS];
  long overflow, unknown;
  struct jkey *slots[JOURNAL_SLOTS];
  struct jobj *made_dirs; /* watcher: directories made or moved in during the run */
};

struct journal_log *journal_open(void) {
  int fd = fanotify_init(FAN_CLASS_NOTIF | FAN_REPORT_DFID_NAME_TARGET | FAN_UNLIMITED_QUEUE | FAN_NONBLOCK |
                             FAN_CLOEXEC,
                         O_RDONLY | O_CLOEXEC);
  if (fd < 0) return NULL;
  struct journal_log *j = calloc(1, sizeof *j);
  if (j == NULL) {
    close(fd);
    errno = ENOMEM;
    return NULL;
  }
  j->fd = fd;
  j->watch = -1;
  return j;
}

struct journal_log *journal_watched(int sock) {
  struct journal_log *j = calloc(1, sizeof *j);
  if (j == NULL) return NULL;
  j->fd = -1;
  j->watch = sock;
  return j;
}

int journal_watching(const struct journal_log *j) { return j->watch >= 0; }

int journal_mark(struct journal_log *j, int dirfd) {
  struct statfs sf;
  if (fstatfs(dirfd, &sf) < 0) return -1;
  for (int i = 0; i < j->nfs; i++)
    if (memcmp(&j->fs[i].fsid, &sf.f_fsid, sizeof sf.f_fsid) == 0) return i;
  if (j->nfs >= JOURNAL_MAX_FS) {
    errno = EMFILE;
    return -1;
  }
  if (j->watch >= 0) { /* the watcher's marks are its own: only the filesystem is noted */
    j->fs[j->nfs].fsid = sf.f_fsid;
    j->fs[j->nfs].mount_fd = -1;
    return j->nfs++;
  }
  /* An O_PATH descriptor would be refused (EBADF): the directory's own, with ".". */
  if (fanotify_mark(j->fd, FAN_MARK_ADD | FAN_MARK_FILESYSTEM, JOURNAL_EVENTS, dirfd, ".") < 0) return -1;
  j->fs[j->nfs].fsid = sf.f_fsid;
  j->fs[j->nfs].mount_fd = fcntl(dirfd, F_DUPFD_CLOEXEC, 3);
  return j->nfs++;
}

int journal_fd(const struct journal_log *j) { return j->fd; }

int journal_mount_fd(const struct journal_log *j, int fs) { return j->fs[fs].mount_fd; }

const char *journal_untrusted(const struct journal_log *j) {
  if (j->overflow && j->watch >= 0) return "the change watcher lost events (its queue overflowed, or it had to start again)";
  if (j->overflow) return "the change journal lost events (its queue overflowed)";
  if (j->unknown) return "the change journal held a record it does not understand";
  return NULL;
}

static unsigned long hash(const void *p, size_t n, unsigned long h) {
  const unsigned char *c = p;
  for (size_t i = 0; i < n; i++) h = (h ^ c[i]) * 1099511628211ul;
  return h;
}

/* The entry (directory handle FH of filesystem FS, NAME), added when new; NULL when out of memory. */
static struct jkey *entry_of(struct journal_log *j, int fs, const struct file_handle *fh, const char *name) {
  unsigned dlen = (unsigned)sizeof *fh + fh->handle_bytes;
  unsigned long h = hash(name, strlen(name), hash(fh, dlen, 14695981039346656037ul + (unsigned long)fs));
  struct jkey **slot = &j->slots[h % JOURNAL_SLOTS];
  for (struct jkey *k = *slot; k != NULL; k = k->next)
    if (k->fs == fs && k->dlen == dlen && memcmp(k->dfh, fh, dlen) == 0 && strcmp(k->name, name) == 0) return k;
  struct jkey *k = calloc(1, sizeof *k + dlen);
  if (k == NULL || (k->name = strdup(name)) == NULL) {
    free(k);
    return NULL;
  }
  k->fs = fs;
  k->dlen = dlen;
  memcpy(k->dfh, fh, dlen);
  k->next = *slot;
  *slot = k;
  return k;
}

static void add_object(struct jkey *k, const struct file_handle *fh) {
  unsigned len = (unsigned)sizeof *fh + fh->handle_bytes;
  for (struct jobj *o = k->objs; o != NULL; o = o->next)
    if (o->len == len && memcmp(o->fh, fh, len) == 0) return;
  struct jobj *o = malloc(sizeof *o + len);
  if (o == NULL) return;
  o->len = len;
  memcpy(o->fh, fh, len);
  o->next = k->objs;
  k->objs = o;
}

static int fs_of(const struct journal_log *j, const fsid_t *fsid) {
  for (int i = 0; i < j->nfs; i++)
    if (memcmp(&j->fs[i].fsid, fsid, sizeof *fsid) == 0) return i;
  return -1;
}

/* One event M: its entries (names) added, with the object's handle. */
static void take_event(struct journal_log *j, const struct fanotify_event_metadata *m) {
  struct jkey *named[3];
  int nnamed = 0;
  const struct file_handle *object = NULL;
  for (const char *p = (const char *)m + m->metadata_len; p < (const char *)m + m->event_len;) {
    const struct fanotify_event_info_header *h = (const void *)p;
    if (h->len == 0) {
      j->unknown++;
      return;
    }
    int t = h->info_type;
    if (t == FAN_EVENT_INFO_TYPE_FID || t == FAN_EVENT_INFO_TYPE_DFID || t == FAN_EVENT_INFO_TYPE_DFID_NAME ||
        t == FAN_EVENT_INFO_TYPE_OLD_DFID_NAME || t == FAN_EVENT_INFO_TYPE_NEW_DFID_NAME) {
      const struct fanotify_event_info_fid *fid = (const void *)p;
      const struct file_handle *fh = (const void *)fid->handle;
      int fs = fs_of(j, (const fsid_t *)&fid->fsid);
      if (fs < 0) { /* another filesystem's: not one of ours */
      } else if (t == FAN_EVENT_INFO_TYPE_FID) {
        object = fh;
      } else {
        const char *name = t == FAN_EVENT_INFO_TYPE_DFID ? "" : (const char *)fh->f_handle + fh->handle_bytes;
        if (strcmp(name, ".") == 0) name = "";
        struct jkey *k = nnamed < 3 ? entry_of(j, fs, fh, name) : NULL;
        if (k == NULL) j->unknown++; /* out of memory: as good as lost */
        else {
          k->mask |= m->mask;
          named[nnamed++] = k;
        }
      }
    } else if (t != FAN_EVENT_INFO_TYPE_PIDFD) {
      j->unknown++;
    }
    p += h->len;
  }
  if (object != NULL)
    for (int i = 0; i < nnamed; i++)
      if (named[i]->name[0] != '\0') add_object(named[i], object);
}

void journal_drain(struct journal_log *j) {
  static char buf[1 << 17];
  if (j->watch >= 0) return; /* the watcher reads its own group; journal_fetch asks it */
  ssize_t len;
  while ((len = read(j->fd, buf, sizeof buf)) > 0 || (len < 0 && errno == EINTR)) {
    if (len < 0) continue;
    for (struct fanotify_event_metadata *m = (void *)buf; FAN_EVENT_OK(m, len); m = FAN_EVENT_NEXT(m, len)) {
      if (m->vers != FANOTIFY_METADATA_VERSION) j->unknown++;
      else if (m->mask & FAN_Q_OVERFLOW) j->overflow++;
      else {
        if (m->fd >= 0) close(m->fd);
        take_event(j, m);
      }
    }
  }
  if (len < 0 && errno != EAGAIN) j->unknown++;
}

struct jkey *journal_next(struct journal_log *j, struct jkey *prev) {
  size_t slot = 0;
  if (prev != NULL) {
    if (prev->next != NULL) return prev->next;
    unsigned long h = hash(prev->name, strlen(prev->name),
                           hash(prev->dfh, prev->dlen, 14695981039346656037ul + (unsigned long)prev->fs));
    slot = h % JOURNAL_SLOTS + 1;
  }
  for (; slot < JOURNAL_SLOTS; slot++)
    if (j->slots[slot] != NULL) return j->slots[slot];
  return NULL;
}

int journal_watch_begin(struct journal_log *j, const int *fds, int n, unsigned char *states) {
  return watch_begin(j->watch, fds, n, &j->token, states);
}

/* The index of filesystem FSID (8 bytes), noted when new; -1 when the table is full. */
static int fs_index(struct journal_log *j, uint64_t fsid) {
  fsid_t f;
  memcpy(&f, &fsid, sizeof f);
  int fs = fs_of(j, &f);
  if (fs >= 0 || j->nfs >= JOURNAL_MAX_FS) return fs;
  j->fs[j->nfs].fsid = f;
  j->fs[j->nfs].mount_fd = -1;
  return j->nfs++;
}

static void note_made_dir(struct journal_log *j, const struct file_handle *fh, unsigned len) {
  struct jobj *o = malloc(sizeof *o + len);
  if (o == NULL) {
    j->unknown++;
    return;
  }
  o->len = len;
  memcpy(o->fh, fh, len);
  o->next = j->made_dirs;
  j->made_dirs = o;
}

static void take_record(const struct watch_record *r, void *ctx) {
  struct journal_log *j = ctx;
  int fs = fs_index(j, r->fsid);
  struct jkey *k = fs < 0 ? NULL : entry_of(j, fs, r->dfh, r->name);
  if (k == NULL) {
    j->unknown++;
    return;
  }
  k->mask |= r->mask;
  const unsigned char *p = r->objs;
  for (int i = 0; i < r->nobj; i++) {
    uint32_t len;
    memcpy(&len, p + 8, 4);
    if (r->name[0] != '\0') add_object(k, (const void *)(p + 12));
    if ((r->mask & FAN_ONDIR) && (r->mask & (FAN_CREATE | FAN_MOVED_TO))) note_made_dir(j, (const void *)(p + 12), len);
    p += 12 + len;
  }
}

void journal_fetch(struct journal_log *j) {
  if (j->watch < 0) return;
  int lost = 0;
  if (watch_end(j->watch, j->token, take_record, j, &lost) < 0) j->unknown++;
  if (lost) j->overflow++;
}

int journal_made_dir(const struct journal_log *j, const void *fh, unsigned len) {
  for (const struct jobj *o = j->made_dirs; o != NULL; o = o->next)
    if (o->len == len && memcmp(o->fh, fh, len) == 0) return 1;
  return 0;
}

int journal_open_handle(const struct journal_log *j, int fs, const void *fh, int flags) {
  if (j->watch < 0) return open_by_handle_at(j->fs[fs].mount_fd, (struct file_handle *)fh, flags);
  const struct file_handle *h = fh;
  uint64_t fsid;
  memcpy(&fsid, &j->fs[fs].fsid, sizeof fsid);
  return watch_open_dir(j->watch, fsid, fh, (unsigned)sizeof *h + h->handle_bytes);
}
