/*
 * The launcher's supervisor of a recorded run: a thread of the launcher (an ancestor of every sandboxed
 * process, so it may read their memory where Yama allows only that) that receives the trapping filter's
 * listener from the helper, and for each trapped call saves the before-state of the path it names into the
 * change store (store.c), then lets the call go on (SECCOMP_USER_NOTIF_FLAG_CONTINUE). A call is never
 * refused: what cannot be recorded makes the run not undoable instead.
 */
#ifndef ALEPH_CHANGES_SUPERVISE_H
#define ALEPH_CHANGES_SUPERVISE_H

/* Before PROGRAM starts: the socket pair; the descriptor number PROGRAM inherits (for `@CHANGES`). */
int supervise_prepare(void);
/* After PROGRAM started: our copy of its end closed, the supervisor thread started. */
void supervise_start(void);
/* After the run (every process gone, or going): the thread stopped and joined, the after-states taken and
 * the store written. */
void supervise_finish(void);

#endif
