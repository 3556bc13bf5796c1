/*
 * What git accepts as a git directory (gitdir.h). Git takes a directory as its repository when it holds
 * HEAD, objects and refs, or HEAD and commondir (the objects and refs then live where commondir says);
 * a bare repository and one found through a `.git` file are no different. So a directory with objects and
 * refs is treated as one even without HEAD (the common side of a split, or one whose HEAD a later run adds),
 * and so is one with HEAD and commondir. The check may take a few directories for git directories that git
 * would not; it never misses one git would use.
 */
#define _GNU_SOURCE
#include "gitdir.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>

const char *const GIT_CONTROL[] = {"config", "config.worktree", "commondir", "gitdir", "hooks", "info", NULL};

int git_marker(const char *name) {
  if (strcmp(name, "HEAD") == 0) return GIT_HEAD;
  if (strcmp(name, "objects") == 0) return GIT_OBJECTS;
  if (strcmp(name, "refs") == 0) return GIT_REFS;
  if (strcmp(name, "commondir") == 0) return GIT_COMMONDIR;
  return 0;
}

int git_dir_like(int marks) {
  return (marks & (GIT_OBJECTS | GIT_REFS)) == (GIT_OBJECTS | GIT_REFS) ||
         (marks & (GIT_HEAD | GIT_COMMONDIR)) == (GIT_HEAD | GIT_COMMONDIR);
}

int git_control(const char *name) {
  for (int i = 0; GIT_CONTROL[i] != NULL; i++)
    if (strcmp(GIT_CONTROL[i], name) == 0) return 1;
  return 0;
}

int git_marks_at(int fd) {
  static const char *const names[] = {"HEAD", "objects", "refs", "commondir"};
  int marks = 0;
  for (int i = 0; i < 4; i++) {
    struct stat st;
    if (fstatat(fd, names[i], &st, AT_SYMLINK_NOFOLLOW) == 0) marks |= git_marker(names[i]);
    else if (errno != ENOENT && errno != ENOTDIR) return -1;
  }
  return marks;
}
