/* Opening a path a sandboxed command could have changed (paths.h): the words for why it failed. */
#define _GNU_SOURCE
#include "paths.h"

#include <errno.h>
#include <string.h>

const char *open_path_why(int e) {
  if (e == ELOOP) return "it or a directory above it is a symlink, which could be swapped";
  if (e == EXDEV) return "it leads outside its parent";
  return strerror(e);
}
