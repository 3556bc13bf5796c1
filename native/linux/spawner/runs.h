/*
 * The fork server's runs under way: their pids, request ids and lent network namespaces, until they are
 * reaped and answered E.
 */
#ifndef ALEPH_SPAWNER_RUNS_H
#define ALEPH_SPAWNER_RUNS_H

#include <stdint.h>
#include <sys/types.h>

void runs_init(void);
/* A free slot of the table, or -1 when it is full. */
int free_run_slot(void);
/* Records the run PID of request ID in SLOT, with the network namespace NET it was lent (-1: none). */
void add_run(int slot, pid_t pid, uint32_t id, int net);
/* The run in SLOT is reaped without an answer (it was answered F). */
void unanswered_run(int slot);
/* Reaps what exited and answers E for each; whether anything did. */
int reap_runs(void);

#endif
