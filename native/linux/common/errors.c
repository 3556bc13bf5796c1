/*
 * Errors of every mode of aleph-sandbox-init (errors.h): die() (and the helper's set-up status channel
 * it also writes to) and the strict number reader that dies on a bad option value.
 */
#define _GNU_SOURCE
#include "errors.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int status_fd = -1;

void status_channel(int fd) { status_fd = fd; }

/* One whole line `KIND[ TEXT]` to the status channel (a single write: a pipe keeps it whole). */
static void status_put(const char *kind, const char *text) {
  if (status_fd < 0) return;
  char line[1024];
  int n = snprintf(line, sizeof line, text == NULL ? "%s\n" : "%s %s\n", kind, text);
  if (n < 0) return;
  if (n >= (int)sizeof line) {
    n = (int)sizeof line;
    line[n - 1] = '\n';
  }
  for (int k = 0; k < n; k++)
    if (line[k] == '\n' && k != n - 1) line[k] = '?';
  while (write(status_fd, line, (size_t)n) < 0 && errno == EINTR) {
  }
}

void status_started(void) { status_put("started", NULL); }

void die(const char *fmt, ...) {
  char msg[900];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  fprintf(stderr, "aleph-sandbox-init: %s\n", msg);
  status_put("failed", msg);
  exit(125);
}

long parse_long(const char *s, const char *what) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno != 0 || *end != '\0' || end == s) die("bad %s: %s", what, s);
  return v;
}
