/*
 * What git accepts as a git directory, and what in one it runs or reads as configuration (its control
 * entries), for the checks after the run.
 */
#ifndef ALEPH_AFTER_RUN_GITDIR_H
#define ALEPH_AFTER_RUN_GITDIR_H

/* The markers of a git directory, as bits. */
#define GIT_HEAD 1
#define GIT_OBJECTS 2
#define GIT_REFS 4
#define GIT_COMMONDIR 8

/* The marker bit of the entry NAME of a directory, 0 for none. */
int git_marker(const char *name);
/* Whether a directory holding MARKS is a git directory, or either side of one split with commondir:
 * objects and refs (a repository, bare or not, or the common side), or HEAD and commondir (a linked
 * worktree's or the other side). */
int git_dir_like(int marks);
/* Whether NAME is a control entry of a git directory: config, config.worktree, commondir, gitdir, hooks,
 * info (modules and worktrees hold git directories of their own, checked as such). */
int git_control(const char *name);
/* The control entries, NULL-terminated. */
extern const char *const GIT_CONTROL[];
/* The markers of the directory FD, found with fstatat; -1 when one cannot be stat'ed for a reason other
 * than its absence. */
int git_marks_at(int fd);

#endif
