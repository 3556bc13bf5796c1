/*
 * One path's state, as the change recording saves it before a run and finds it after (lstat on a
 * descriptor beneath its root), and as the undo executor checks it: the text form both read and write in
 * a run's `states` file, with the escaping of names (store.c, undo.c).
 */
#ifndef ALEPH_CHANGES_STATE_H
#define ALEPH_CHANGES_STATE_H

#include <stdio.h>
#include <sys/stat.h>
#include <sys/types.h>

/* 'f' file, 'd' directory, 'l' symlink, 'p' FIFO, 'o' other (a socket, a device), '-' absent, '?' could not
 * be looked at. */
struct path_state {
  char type;
  unsigned mode; /* permission bits (07777) */
  unsigned uid, gid;
  long long size, blocks;
  unsigned long long dev, ino;
  long long msec, mnsec, csec, cnsec;
  long long bsec, bnsec; /* birth time; 0 0 where the filesystem does not tell it */
  char *target;          /* symlink target (malloc'd) or NULL */
};

/* NAME (beneath DIRFD; "" with DIRFD: DIRFD itself) looked at without following a symlink into *S. */
void state_of(int dirfd, const char *name, struct path_state *s);
/* Whether A and B are the same object left the same way (type, inode, size, times, mode, owner, target). */
int state_same(const struct path_state *a, const struct path_state *b);
/* state_same without the change time, which nothing can set back: the undo of a later run that touched
 * the same path restores everything else (bytes, mode, owner, modification time), so an earlier run stays
 * undoable after it. An edit that keeps a file's size and modification time (touch -r) is not seen. */
int state_same_but_ctime(const struct path_state *a, const struct path_state *b);
/* Whether A and B are one object: the same inode, and where both birth times are known, the same birth
 * (an inode a run freed can be handed at once to what it makes next, which is no rename). */
int state_same_object(const struct path_state *a, const struct path_state *b);
/* Writes S as one space-separated group of fields to F. */
void state_write(FILE *f, const struct path_state *s);
/* Reads a group written by state_write from *P (advanced past it); -1 when malformed. */
int state_read(char **p, struct path_state *s);
/* Writes S's birth time as ` @SEC.NSEC`: after an entry's two groups (a states file without it still reads). */
void state_write_birth(FILE *f, const struct path_state *s);
/* Reads a birth time written by state_write_birth from *P into S when one is there (else S's stays 0 0). */
void state_read_birth(char **p, struct path_state *s);
/* Writes S escaped (`:` then the bytes, those below '!' and '%' and DEL as %XX). */
void name_write(FILE *f, const char *s);
/* Reads a name written by name_write from *P into a malloc'd string; NULL when malformed. */
char *name_read(char **p);

#endif
