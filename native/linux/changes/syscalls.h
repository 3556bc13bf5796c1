/*
 * The calls the change recording traps, and where each keeps its paths: one table the filter (notify.c)
 * and the supervisor's decoding (supervise.c) share, so what is trapped is exactly what is understood.
 */
#ifndef ALEPH_CHANGES_SYSCALLS_H
#define ALEPH_CHANGES_SYSCALLS_H

/* What a trapped call does to the path it names. */
enum change_kind {
  CK_OPEN,    /* open/openat/creat/openat2: writes when its flags say so */
  CK_REMOVE,  /* unlink, rmdir, unlinkat: the path goes */
  CK_RENAME,  /* the first path leaves, the second is replaced */
  CK_CREATE,  /* mkdir, mknod, symlink, link (second path): the path appears */
  CK_META,    /* chmod, chown, truncate, utimensat: the path's mode, owner, times or content change */
};

/* One trapped call: its number, kind, and the arguments holding its paths (-1: none; a dirfd of -1 means
 * the cwd, a path of -1 with a dirfd means the descriptor itself: fchmod, fchown). */
struct trapped_call {
  int nr;
  enum change_kind kind;
  int dirfd, path;   /* the (first) path */
  int dirfd2, path2; /* rename's new path; link's existing one (its bytes may then change through the
                        new link); link's and symlink's created path is the first */
  int flags;         /* open's flags argument, or an *at call's AT_* flags; -1: none */
  int follows;       /* the call follows a last symlink (open, chmod, chown, truncate) */
};

extern const struct trapped_call changes_calls[];
extern const int changes_ncalls;

/* The entry of call NR, or NULL. */
const struct trapped_call *changes_call(int nr);

#endif
