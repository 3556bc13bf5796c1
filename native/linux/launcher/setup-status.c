/*
 * The helper's set-up status channel (setup-status.h). The reading end is read once PROGRAM has ended,
 * without blocking (bwrap's own processes may still hold the writing end): what the helper wrote is in the
 * pipe's buffer by then.
 */
#define _GNU_SOURCE
#include "setup-status.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "../common/errors.h"
#include "../common/report.h"

static int status_r = -1, status_w = -1;
static char status_arg[16];

void setup_status_open(char **prog) {
  for (int i = 0; prog[i] != NULL; i++) {
    if (strcmp(prog[i], "@STATUS") != 0) continue;
    if (status_w < 0) {
      int fds[2];
      if (pipe2(fds, O_CLOEXEC) < 0) die("launch: status pipe: %s", strerror(errno));
      status_r = fds[0];
      status_w = fds[1];
      if (fcntl(status_w, F_SETFD, 0) < 0) die("launch: status pipe: %s", strerror(errno));
      snprintf(status_arg, sizeof status_arg, "%d", status_w);
    }
    prog[i] = status_arg;
  }
}

int setup_status_fd(void) { return status_w; }

void setup_status_started(void) {
  if (status_w >= 0) close(status_w);
  status_w = -1;
}

void setup_status_report(FILE *report) {
  if (status_r < 0) return;
  char buf[1100];
  ssize_t n;
  fcntl(status_r, F_SETFL, O_NONBLOCK);
  while ((n = read(status_r, buf, sizeof buf - 1)) < 0 && errno == EINTR) {
  }
  close(status_r);
  status_r = -1;
  buf[n > 0 ? n : 0] = '\0';
  char *nl = strchr(buf, '\n');
  /* Only a whole first line counts (the helper writes each in one write). */
  if (nl == NULL) buf[0] = '\0';
  else *nl = '\0';
  if (strcmp(buf, "started") == 0) report_line(report, "setup", "started", NULL);
  else if (strncmp(buf, "failed ", 7) == 0) report_line(report, "setup", "failed", buf + 7);
  else report_line(report, "setup", "none", NULL);
}
