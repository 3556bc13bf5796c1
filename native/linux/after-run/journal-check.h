/*
 * The check by the change journal (fanotify), on a host that can keep one: what the run changed, found
 * without walking what it did not.
 */
#ifndef ALEPH_AFTER_RUN_JOURNAL_CHECK_H
#define ALEPH_AFTER_RUN_JOURNAL_CHECK_H

#include <sys/types.h>

#include "check-types.h"

struct journal;

/* Before PROGRAM starts: a journal of the filesystems holding C's roots (a root host), or of the change
 * watcher on connection WATCH_FD (an unprivileged host; -1: none); NULL when out of memory. Roots neither
 * can vouch for are walked. */
struct journal *journal_start(struct check *c, int watch_fd);
/* Waits for PROGRAM (PID) while draining J; its wait status. */
int journal_wait(struct journal *j, pid_t pid);
/* For a caller with its own wait loop: J's descriptor to poll (-1: none), and its drain once readable. */
int journal_poll_fd(const struct journal *j);
void journal_poll_drain(struct journal *j);
/* After the run: J drained to its end and checked; each root it covered gets method CHECK_JOURNAL, the
 * others are left for the walk. */
void journal_check(struct journal *j, struct check *c);

#endif
