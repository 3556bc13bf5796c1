/*
 * What a tier 3 run leaves behind (the launcher's `--reap`): without a PID namespace to take them down, a
 * daemon that double-forked or a process in a session of its own would outlive the program. The launcher
 * becomes a child subreaper before the run, so they are reparented to it, and kills them after it.
 */
#define _GNU_SOURCE
#include "reap.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../common/errors.h"

void reap_prepare(void) {
  if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0) die("launch: PR_SET_CHILD_SUBREAPER: %s", strerror(errno));
}

/* Kills the launcher's remaining children (descendants end up here as their parents die) until none is left. */
void reap_descendants(void) {
  for (int round = 0; round < 1000; round++) {
    int found = 0;
    DIR *tasks = opendir("/proc/self/task");
    if (tasks == NULL) return;
    struct dirent *t;
    while ((t = readdir(tasks)) != NULL) {
      if (t->d_name[0] == '.') continue;
      char path[sizeof "/proc/self/task//children" + 256]; /* any directory entry name fits */
      snprintf(path, sizeof path, "/proc/self/task/%s/children", t->d_name);
      FILE *f = fopen(path, "re");
      if (f == NULL) continue;
      int pid;
      while (fscanf(f, "%d", &pid) == 1) {
        found = 1;
        kill(pid, SIGKILL);
      }
      fclose(f);
    }
    closedir(tasks);
    /* Reap what was killed; its own children are ours now and show up in the next round. */
    while (waitpid(-1, NULL, WNOHANG) > 0) {
    }
    if (!found && waitpid(-1, NULL, WNOHANG) < 0 && errno == ECHILD) return;
    if (!found) usleep(1000);
  }
}
