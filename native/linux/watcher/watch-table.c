/*
 * The change watcher's table of directories (watch-table.h): a hash table by file handle. A directory's
 * place is its parent's handle and its name; it is opened again through the places up to its root, beneath
 * the root's descriptor, with no symlink on the way and on the root's mount, and then its handle is
 * compared with the one it should have (the table is kept from events, which the kernel may merge, so a
 * place is only ever a claim to check).
 */
#define _GNU_SOURCE
#include "watch-table.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "../common/paths.h"

#define TREE_SLOTS (1 << 16)
#define UNLOCATED_MAX 4096

struct wroot wt_roots[WATCH_MAX_ROOTS];
int wt_nroots;
static struct wdir *slots[TREE_SLOTS];
static struct whandle unlocated[UNLOCATED_MAX];
static int nunlocated, unlocated_lost;
int wt_away;
#define GITFILES_MAX 8192
static struct whandle gitfiles[GITFILES_MAX];
static int ngitfiles, gitfiles_lost;

void wt_note_gitfile(const struct whandle *dir) {
  for (int i = 0; i < ngitfiles; i++)
    if (wt_same(&gitfiles[i], dir)) return;
  if (ngitfiles == GITFILES_MAX) gitfiles_lost = 1;
  else gitfiles[ngitfiles++] = *dir;
}

const struct whandle *wt_gitfiles(int *n, int *lost) {
  /* A directory deleted (or forgotten) holds no `.git` any more: dropped from the list. */
  for (int i = 0; i < ngitfiles;) {
    struct wdir *d = wt_find(&gitfiles[i]);
    if (d == NULL || d->gone == DELETED) gitfiles[i] = gitfiles[--ngitfiles];
    else i++;
  }
  *n = ngitfiles;
  *lost = gitfiles_lost;
  return gitfiles;
}

static unsigned long hash_of(const struct whandle *h) {
  unsigned long x = 14695981039346656037ul ^ h->fsid;
  for (unsigned i = 0; i < h->len; i++) x = (x ^ h->fh[i]) * 1099511628211ul;
  return x % TREE_SLOTS;
}

int wt_same(const struct whandle *a, const struct whandle *b) {
  return a->fsid == b->fsid && a->len == b->len && memcmp(a->fh, b->fh, a->len) == 0;
}

struct wdir *wt_find(const struct whandle *h) {
  for (struct wdir *d = slots[hash_of(h)]; d != NULL; d = d->next)
    if (wt_same(&d->h, h)) return d;
  return NULL;
}

/* The handle of directory FD into H; -1 when it has none. */
int wt_handle_of(int fd, struct whandle *h) {
  struct file_handle *fh = (struct file_handle *)h->fh;
  struct statfs sf;
  int mnt;
  fh->handle_bytes = WATCH_HANDLE_MAX;
  if (fstatfs(fd, &sf) < 0 || name_to_handle_at(fd, "", fh, &mnt, AT_EMPTY_PATH) < 0) return -1;
  memcpy(&h->fsid, &sf.f_fsid, sizeof h->fsid);
  h->len = (unsigned)sizeof *fh + fh->handle_bytes;
  return 0;
}

uint64_t wt_mount_id(int fd) {
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
    if (d->gone) return errno = d->gone == DELETED ? ESTALE : ENOENT, -1;
    if (hops > 4096 || at < n + 2) return errno = ENAMETOOLONG, -1;
    at -= n;
    memcpy(out + at, d->name, n);
    out[--at] = '/';
    d = wt_find(&d->parent);
  }
  if (d == NULL || d->gone) return errno = d == NULL || d->gone == AWAY ? ENOENT : ESTALE, -1;
  *root = d->root; /* the root it lies beneath now */
  out[--at] = '.';
  memmove(out, out + at, size - at);
  return 0;
}

/* Directory NAME of marked directory P (or P itself when NAME is NULL), opened O_PATH beneath P's root
 * with no symlink on the way; -1 with errno. */
int wt_open_below(const struct wdir *p, const char *name) {
  static char path[PATH_MAX + 256];
  int root;
  if (path_of(p, path, sizeof path, &root) < 0) return -1;
  size_t n = strlen(path);
  if (name != NULL && n + 1 + strlen(name) + 1 > sizeof path) return errno = ENAMETOOLONG, -1;
  if (name != NULL) snprintf(path + n, sizeof path - n, "/%s", name);
  int o = open_path_nolink(wt_roots[root].fd, path, RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS);
  struct stat st;
  if (o >= 0 && (fstat(o, &st) < 0 || !S_ISDIR(st.st_mode))) {
    close(o);
    return errno = ENOTDIR, -1;
  }
  return o;
}

/* Adds OBJ to the unlocated directories (ADD) or takes it out; whether it was there. */
int wt_unlocate(const struct whandle *obj, int add) {
  for (int i = 0; i < nunlocated; i++)
    if (wt_same(&unlocated[i], obj)) {
      if (!add) unlocated[i] = unlocated[--nunlocated];
      return 1;
    }
  if (!add) return 0;
  if (nunlocated == UNLOCATED_MAX) unlocated_lost = 1;
  else unlocated[nunlocated++] = *obj;
  return 0;
}

/* Whether marked directory D is where the table says (opened there, the same handle). */
int wt_where_said(const struct wdir *d) {
  int fd = d->gone == HERE ? wt_open_below(d, NULL) : -1;
  struct whandle h;
  int ok = fd >= 0 && wt_handle_of(fd, &h) == 0 && wt_same(&h, &d->h);
  if (fd >= 0) close(fd);
  return ok;
}

void wt_prune(uint64_t seq) {
  for (int s = 0; s < TREE_SLOTS; s++)
    for (struct wdir **p = &slots[s]; *p != NULL;) {
      struct wdir *d = *p;
      if (d->gone == DELETED && d->gone_seq <= seq) {
        *p = d->next;
        free(d->name);
        free(d);
      } else {
        p = &d->next;
      }
    }
}


struct wdir *wt_add(const struct whandle *h) {
  struct wdir *d = calloc(1, sizeof *d);
  if (d == NULL) return NULL;
  d->h = *h;
  unsigned long s = hash_of(h);
  d->next = slots[s];
  slots[s] = d;
  return d;
}

int wt_unlocated(void) { return nunlocated > 0 || unlocated_lost || wt_away > 0; }

void wt_set_gone(struct wdir *d, int gone, uint64_t seq) {
  wt_away += (gone == AWAY) - (d->gone == AWAY);
  d->gone = gone;
  d->gone_seq = seq;
}

void wt_clear(void) {
  for (int s = 0; s < TREE_SLOTS; s++)
    while (slots[s] != NULL) {
      struct wdir *d = slots[s];
      slots[s] = d->next;
      free(d->name);
      free(d);
    }
  nunlocated = 0;
  unlocated_lost = 0;
  wt_away = 0;
  ngitfiles = 0;
  gitfiles_lost = 0;
}
