/*
 * The change journal of a run: a fanotify group marking each filesystem that holds a writable root,
 * made before the run and drained while it runs and after it, into the set of (directory, name) entries
 * that changed, each with what happened to it and the handles of the objects it named.
 */
#ifndef ALEPH_AFTER_RUN_JOURNAL_H
#define ALEPH_AFTER_RUN_JOURNAL_H

#include <stdint.h>

#define JOURNAL_MAX_FS 16

/* An object (inode) an entry named in an event: its file handle (struct file_handle bytes). */
struct jobj {
  struct jobj *next;
  unsigned len;
  unsigned char fh[];
};

/* An entry that changed: the handle of its directory, its name ("" for the directory itself). */
struct jkey {
  struct jkey *next;
  struct jobj *objs;
  uint64_t mask; /* the events' FAN_* bits, OR-ed */
  int fs;        /* which marked filesystem */
  char *name;
  unsigned dlen;
  unsigned char dfh[]; /* struct file_handle bytes */
};

struct journal_log;

/* A fresh group (root only: an unlimited queue); NULL with errno when this host cannot keep one. */
struct journal_log *journal_open(void);
/* Marks the filesystem holding the directory DIRFD (O_RDONLY, not O_PATH: it decodes the handles too);
 * its index, or -1 with errno when the filesystem refuses the mark. */
int journal_mark(struct journal_log *j, int dirfd);
/* The group's descriptor, to poll. */
int journal_fd(const struct journal_log *j);
/* Reads every queued event into the set. */
void journal_drain(struct journal_log *j);
/* Why the set cannot be trusted (events were lost, or a record was not understood), or NULL. */
const char *journal_untrusted(const struct journal_log *j);
/* The descriptor a filesystem's handles decode through. */
int journal_mount_fd(const struct journal_log *j, int fs);
/* The change watcher's journal (an unprivileged host: watcher/watcher.h), on its connection SOCK. */
struct journal_log *journal_watched(int sock);
int journal_watching(const struct journal_log *j);
/* Begins the run with the watcher for the N roots FDS: STATES[i] 0 where it vouches for root i. -1 when it
 * does not answer. */
int journal_watch_begin(struct journal_log *j, const int *fds, int n, unsigned char *states);
/* The watcher's entries since the begin, into the set (a broken answer or lost events: untrusted). */
void journal_fetch(struct journal_log *j);
/* Whether the directory with handle FH (LEN bytes) was made or moved in during the run (watcher). */
int journal_made_dir(const struct journal_log *j, const void *fh, unsigned len);
/* The directory with handle FH on filesystem FS opened (FLAGS), by open_by_handle_at or the watcher; -1
 * with errno (ESTALE: gone). */
int journal_open_handle(const struct journal_log *j, int fs, const void *fh, int flags);
/* The entries, in no order: call with NULL first, then with the previous one; NULL at the end. */
struct jkey *journal_next(struct journal_log *j, struct jkey *prev);

#endif
