/*
 * Reading the change watcher's group (watch-events.h). With FAN_REPORT_DFID_NAME_TARGET each event names
 * the directory (handle) and the entry (name) it happened to, and the object (its own handle) for the
 * events of directory entries; events on a directory itself name it as "." or by its handle alone.
 */
#define _GNU_SOURCE
#include "watch-events.h"

#include <errno.h>
#include <string.h>
#include <fcntl.h>
#include <sys/fanotify.h>
#include <unistd.h>

#include "watch-log.h"
#include "watch-table.h"
#include "watch-tree.h"

static void to_handle(const struct fanotify_event_info_fid *fid, struct whandle *h) {
  const struct file_handle *fh = (const void *)fid->handle;
  unsigned len = (unsigned)sizeof *fh + fh->handle_bytes;
  memcpy(&h->fsid, &fid->fsid, sizeof h->fsid);
  h->len = len <= sizeof h->fh ? len : 0;
  if (h->len != 0) memcpy(h->fh, fh, len);
}

/* One event M, as event number SEQ. */
static void take(const struct fanotify_event_metadata *m, uint64_t seq) {
  struct whandle dirs[3], obj;
  const char *names[3];
  int ndirs = 0, has_obj = 0;
  for (const char *p = (const char *)m + m->metadata_len; p < (const char *)m + m->event_len;) {
    const struct fanotify_event_info_header *h = (const void *)p;
    if (h->len == 0) break;
    int t = h->info_type;
    const struct fanotify_event_info_fid *fid = (const void *)p;
    const struct file_handle *fh = (const void *)fid->handle;
    if (t == FAN_EVENT_INFO_TYPE_FID) {
      to_handle(fid, &obj);
      has_obj = obj.len != 0;
    } else if ((t == FAN_EVENT_INFO_TYPE_DFID || t == FAN_EVENT_INFO_TYPE_DFID_NAME ||
                t == FAN_EVENT_INFO_TYPE_OLD_DFID_NAME || t == FAN_EVENT_INFO_TYPE_NEW_DFID_NAME) &&
               ndirs < 3) {
      to_handle(fid, &dirs[ndirs]);
      const char *name = t == FAN_EVENT_INFO_TYPE_DFID ? "" : (const char *)fh->f_handle + fh->handle_bytes;
      names[ndirs] = strcmp(name, ".") == 0 ? "" : name;
      if (dirs[ndirs].len != 0) ndirs++;
      else watch_lost_seq = seq; /* a handle too large to keep: as good as lost */
    }
    p += h->len;
  }
  for (int i = 0; i < ndirs; i++) watch_log_note(&dirs[i], names[i], m->mask, has_obj ? &obj : NULL, seq);
  for (int i = 0; i < ndirs; i++)
    if (!(m->mask & FAN_ONDIR) && strcmp(names[i], ".git") == 0) wt_note_gitfile(&dirs[i]);
  if (ndirs == 0 && has_obj) watch_log_note(&obj, "", m->mask, NULL, seq);
  /* An event of a directory itself (a self move or deletion) names it as "." of itself, with no object. */
  for (int i = 0; !has_obj && i < ndirs; i++)
    if (names[i][0] == '\0') {
      obj = dirs[i];
      has_obj = 1;
    }
  if (!has_obj || !(m->mask & FAN_ONDIR)) return;
  /* A directory deleted is dead (a directory has one link): wherever its other events put it. */
  if (m->mask & (FAN_DELETE | FAN_DELETE_SELF)) watch_gone(&obj, seq);
  else if (m->mask & (FAN_CREATE | FAN_MOVED_TO | FAN_MOVED_FROM))
    watch_moved(dirs, names, ndirs, &obj, (m->mask & (FAN_CREATE | FAN_MOVED_TO)) != 0, seq);
}

void watch_drain(void) {
  static char buf[1 << 16];
  if (watch_group < 0) return;
  for (;;) {
    ssize_t len = read(watch_group, buf, sizeof buf);
    if (len < 0 && errno == EINTR) continue;
    if (len <= 0) {
      if (len < 0 && errno != EAGAIN) {
        watch_lost_seq = ++watch_seq;
        watch_rebuild();
      }
      watch_settle(); /* every queued event read: the places of what moved are all known now */
      return;
    }
    for (struct fanotify_event_metadata *m = (void *)buf; FAN_EVENT_OK(m, len); m = FAN_EVENT_NEXT(m, len)) {
      uint64_t seq = ++watch_seq;
      if (m->fd >= 0) close(m->fd);
      if (m->vers != FANOTIFY_METADATA_VERSION || (m->mask & FAN_Q_OVERFLOW)) {
        watch_lost_seq = seq;
        watch_rebuild();
      } else {
        take(m, seq);
      }
    }
  }
}
