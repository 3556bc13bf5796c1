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
/* The entries, in no order: call with NULL first, then with the previous one; NULL at the end. */
struct jkey *journal_next(struct journal_log *j, struct jkey *prev);

#endif
