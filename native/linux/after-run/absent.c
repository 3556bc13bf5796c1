/*
 * Protected paths absent at the start (absent.h). Each is walked again after the run from the deepest
 * directory that existed then, component by component on descriptors, without following a symlink: the
 * first component that exists but is not a directory (a symlink, a file) was made during the run and
 * would lead a host tool astray, so it is set aside; the path itself, when it exists, is set aside too.
 */
#define _GNU_SOURCE
#include "absent.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/errors.h"
#include "../common/paths.h"
#include "quarantine.h"

#define ABSENT_MAX 2048 /* more than the launcher opens paths (MAX_NODES) */

static struct {
  int dirfd;
  char *rest, *shown;
  size_t root_len;
} absent[ABSENT_MAX];
static int nabsent;

void absent_add(int dirfd, const char *rest, const char *shown, size_t root_len) {
  /* One left unrecorded would go unchecked: fail closed. */
  if (nabsent >= ABSENT_MAX) die("launch: too many absent protected paths");
  absent[nabsent].dirfd = dirfd;
  absent[nabsent].root_len = root_len;
  absent[nabsent].rest = strdup(rest);
  absent[nabsent].shown = strdup(shown);
  if (absent[nabsent].rest == NULL || absent[nabsent].shown == NULL) die("launch: out of memory");
  nabsent++;
}

/* The one recorded path REST below DIRFD (SHOWN its absolute path). */
static void check_one(int dirfd, char *rest, const char *shown, FILE *report) {
  size_t shown_len = strlen(shown), rest_len = strlen(rest);
  char *path = strdup(shown);
  int cur = fcntl(dirfd, F_DUPFD_CLOEXEC, 3);
  for (char *comp = rest; path != NULL && cur >= 0 && *comp != '\0';) {
    char *slash = strchr(comp, '/');
    if (slash != NULL) *slash = '\0';
    /* SHOWN ends with REST: the path up to this component, for the report. */
    path[shown_len - rest_len + (size_t)(comp - rest) + strlen(comp)] = '\0';
    struct stat st;
    int next = -1;
    if (fstatat(cur, comp, &st, AT_SYMLINK_NOFOLLOW) < 0) {
      /* still absent (or unreachable) */
    } else if (slash == NULL || !S_ISDIR(st.st_mode)) {
      set_aside(cur, comp, report, path);
    } else {
      next = openat(cur, comp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    }
    if (slash != NULL) *slash = '/';
    close(cur);
    cur = next;
    if (slash == NULL) break;
    comp = slash + 1;
    if (path != NULL) memcpy(path, shown, shown_len + 1);
  }
  if (cur >= 0) close(cur);
  free(path);
}

void absent_check(FILE *report) {
  for (int i = 0; i < nabsent; i++) check_one(absent[i].dirfd, absent[i].rest, absent[i].shown, report);
}

void absent_each(void (*fn)(const char *shown, size_t root_len, void *ctx), void *ctx) {
  for (int i = 0; i < nabsent; i++) fn(absent[i].shown, absent[i].root_len, ctx);
}

int absent_check_shown(const char *shown, size_t root_len, FILE *report) {
  size_t len = strlen(shown);
  if (root_len == 0 || root_len + 1 >= len || shown[root_len] != '/') return 0;
  char *root = strndup(shown, root_len), *rest = strdup(shown + root_len + 1);
  int fd = root == NULL ? -1 : open_path(AT_FDCWD, root, RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
  int e = errno, rc = 0;
  if (fd >= 0 && rest != NULL) check_one(fd, rest, shown, report);
  else if (root == NULL || rest == NULL || (e != ENOENT && e != ENOTDIR)) rc = -1;
  if (fd >= 0) close(fd);
  free(root);
  free(rest);
  return rc;
}
