/*
 * The fork server's runs under way (runs.h): a fixed table; a reaped run's process group is killed (what
 * it left there goes with it, E says so) and its network namespace goes back to the pool.
 */
#define _GNU_SOURCE
#include "runs.h"

#include <signal.h>
#include <sys/wait.h>

#include "answer.h"
#include "netpool.h"

#define MAX_RUNS 4096

static struct {
  pid_t pid;
  uint32_t id;
  int net; /* the network namespace lent to the run (netpool.c), or -1 */
} runs[MAX_RUNS];

void runs_init(void) {
  for (int k = 0; k < MAX_RUNS; k++) runs[k].net = -1;
}

int free_run_slot(void) {
  for (int k = 0; k < MAX_RUNS; k++)
    if (runs[k].pid == 0) return k;
  return -1;
}

void add_run(int slot, pid_t pid, uint32_t id, int net) {
  runs[slot].pid = pid;
  runs[slot].id = id;
  runs[slot].net = net; /* back to the pool when the run is reaped */
}

void unanswered_run(int slot) { runs[slot].id = UINT32_MAX; }

int reap_runs(void) {
  int status, any = 0;
  pid_t pid;
  while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
    any = 1;
    for (int k = 0; k < MAX_RUNS; k++) {
      if (runs[k].pid != pid) continue;
      runs[k].pid = 0;
      kill(-pid, SIGKILL); /* what the run left in its process group goes with it (E says so) */
      netpool_return(runs[k].net);
      runs[k].net = -1;
      if (runs[k].id == UINT32_MAX) break;
      if (WIFEXITED(status)) answer("E %u %d 0\n", runs[k].id, WEXITSTATUS(status));
      else answer("E %u -1 %d\n", runs[k].id, WTERMSIG(status));
      break;
    }
  }
  return any;
}
