/*
 * The git directories known beneath a writable root (`gitdirs-DEV-INO` under --state): each a directory
 * that was a git directory when a check saw it, with the time from which that is known. A git directory
 * the run's check finds and does not know (or knows only from after the run started) may have become one
 * during the run: all of its control entries are then set aside.
 */
#ifndef ALEPH_AFTER_RUN_REGISTRY_H
#define ALEPH_AFTER_RUN_REGISTRY_H

#include <sys/stat.h>
#include <time.h>

struct registry;

/* The registry of the root ROOT_ST under STATE_FD, read (empty when it does not exist: *FOUND says). NULL
 * when out of memory. */
struct registry *registry_open(int state_fd, const struct stat *root_st, int *found);
/* The same for another list of directories kept the same way: KIND `gitfiles`, the directories known to
 * hold a `.git` that is not a directory (a pointer to a git directory), swept by ctime after a journal's
 * run (never counted as git directories). */
struct registry *registry_open_named(int state_fd, const char *kind, const struct stat *root_st, int *found);
/* Whether the directory FD (ST its stat) was known as a git directory before START. */
int registry_known(struct registry *g, int fd, const struct stat *st, const struct timespec *start);
/* The directory FD (ST) is a git directory now, known from SINCE on. */
void registry_note(struct registry *g, int fd, const struct stat *st, const struct timespec *since);
/* The known git directories, for the journal's look at their control entries: *N of them, each a handle
 * (struct file_handle) and its device. */
struct registry_entry {
  dev_t dev;
  struct timespec since;
  unsigned char handle[136]; /* a struct file_handle with at most 128 bytes */
};
const struct registry_entry *registry_entries(const struct registry *g, int *n);
/* Those noted by this process (the walk before a root's first run among them), which the file does not
 * hold yet. */
const struct registry_entry *registry_noted(const struct registry *g, int *n);
/* The known git directory ENTRY (one of registry_entries) is gone: dropped when the registry is saved. */
void registry_drop(struct registry *g, const struct registry_entry *entry);
/* Writes the registry back, merged with what other runs wrote meanwhile: the directories noted added, those
 * dropped removed, and when COMPLETE (the check saw the whole root) those known but not noted removed too.
 * Under the file's lock. */
void registry_save(struct registry *g, int complete);
void registry_free(struct registry *g);

#endif
