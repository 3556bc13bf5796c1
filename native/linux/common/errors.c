/*
 * Errors of every mode of aleph-sandbox-init (errors.h): die() and the strict number reader that dies
 * on a bad option value.
 */
#define _GNU_SOURCE
#include "errors.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

void die(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("aleph-sandbox-init: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  exit(125);
}

long parse_long(const char *s, const char *what) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno != 0 || *end != '\0' || end == s) die("bad %s: %s", what, s);
  return v;
}
