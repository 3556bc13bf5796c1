/*
 * The launcher's report (report.h): a stdio stream whose file is made at its first line, and the line
 * format, with no newline or tab of a name in it (a name cannot forge a line or a field).
 */
#define _GNU_SOURCE
#include "report.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

static const char *report_path;
static const char *prefix = "";
static int failures;

void report_prefix(const char *p) { prefix = p == NULL ? "" : p; }

int report_failures(void) { return failures; }

/* `PREFIX KIND `, counting failures. */
static int put_kind(FILE *report, const char *kind) {
  if (strcmp(kind, "failed") == 0) failures++;
  if (report == NULL) return 0;
  fprintf(report, "%s%s ", prefix, kind);
  return 1;
}

static ssize_t report_write(void *cookie, const char *buf, size_t size) {
  int *fd = cookie;
  if (*fd < 0) *fd = open(report_path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (*fd < 0) return -1;
  for (size_t off = 0; off < size;) {
    ssize_t w = write(*fd, buf + off, size - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    off += (size_t)w;
  }
  return (ssize_t)size;
}

static int report_close(void *cookie) {
  int *fd = cookie;
  return *fd >= 0 ? close(*fd) : 0;
}

FILE *report_open(const char *path) {
  static int fd = -1;
  report_path = path;
  cookie_io_functions_t io = {.write = report_write, .close = report_close};
  return fopencookie(&fd, "w", io);
}

static void put_field(FILE *report, const char *s) {
  for (const char *c = s; *c; c++) fputc(*c == '\n' || *c == '\t' ? '?' : *c, report);
}

void report_line(FILE *report, const char *kind, const char *path, const char *why) {
  if (!put_kind(report, kind)) return;
  put_field(report, path);
  if (why != NULL) fprintf(report, ": %s", why);
  fputc('\n', report);
}

void report_pair(FILE *report, const char *kind, const char *a, const char *b, const char *c) {
  if (!put_kind(report, kind)) return;
  put_field(report, a);
  fputc('\t', report);
  put_field(report, b);
  if (c != NULL) {
    fputc('\t', report);
    put_field(report, c);
  }
  fputc('\n', report);
}
