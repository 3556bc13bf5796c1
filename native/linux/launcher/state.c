/* The launcher's state directory (state.h): opened once, its files opened beneath it. */
#define _GNU_SOURCE
#include "state.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "../common/errors.h"
#include "../common/paths.h"

int state_fd = -1;
const char *state_path;

void state_open(const char *path) {
  if (state_fd >= 0) close(state_fd); /* opened before the options (inflight.c), and again by --state */
  state_fd = open_path(AT_FDCWD, path, RESOLVE_NO_SYMLINKS);
  if (state_fd >= 0) {
    close(state_fd);
    state_fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  }
  if (state_fd < 0) die("launch: cannot open the state directory %s: %s", path, open_path_why(errno));
  state_path = path;
}

int state_file(const char *name, int flags) {
  int fd = openat(state_fd, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC | flags, 0600);
  if (fd < 0) die("launch: cannot open state file %s: %s", name, strerror(errno));
  return fd;
}
