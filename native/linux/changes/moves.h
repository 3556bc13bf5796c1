/*
 * The directories a run moved (rename of a directory), in the order they moved, so that a path touched
 * after a move is recorded under the name its object had before the run, and a path recorded before a move
 * is looked at, after the run, where the move took it.
 *
 * A rename is trapped before it runs and may fail; its move counts only once it is seen done: the object is
 * at the new name. That is decided at the first trapped call handled after the rename returned (the same
 * thread's next one, or any other once that thread is no longer in the call: /proc/TID/syscall), before
 * anything else can move the directory again, and at the end of the run. Paths are
 * relative to a writable root; a move from or to outside every root has one side NULL.
 */
#ifndef ALEPH_CHANGES_MOVES_H
#define ALEPH_CHANGES_MOVES_H

#include <sys/types.h>

#include "state.h"

/* A trapped rename (system call NR) by thread TID begins (its two paths follow); EXCHANGE:
 * RENAME_EXCHANGE. */
void moves_rename_begin(pid_t tid, int nr, int exchange);
/* Its source REL beneath root K, as it is now (S). */
void moves_rename_source(int k, const char *rel, const struct path_state *s);
/* Its target REL beneath root K, as it is now (S). */
void moves_rename_target(int k, const char *rel, const struct path_state *s);
/* The rename's paths are all seen: a directory's move is pending until it is seen done. */
void moves_rename_end(void);

/* Decides the pending moves that can be decided now; CALLER the thread whose trapped call is handled (its
 * own earlier rename has returned). LOOK(k, rel, state) looks at a path beneath a root now. */
void moves_settle(pid_t caller, int final, void (*look)(int, const char *, struct path_state *));
/* Whether following names through the moves took more work than the host gives it (moves.c): the run's
 * changes are then not recorded. */
int moves_overloaded(void);
/* Why a move could not be followed (the run then cannot be undone), or NULL. */
const char *moves_problem(void);
/* How many moves are done so far: the epoch of a path touched now. */
int moves_epoch(void);

/*
 * The name, before the run, of the object at REL beneath root K as of EPOCH, into OUT: 0, or 1 when the
 * object came into being during the run (made, or moved in from outside the roots), OUT then a key of it
 * that no path before the run has. -1 when OUT is too small.
 */
int moves_origin(int k, const char *rel, int epoch, char *out, size_t size);
/* Where the path REL beneath root K, as of EPOCH, is now, into OUT: 0, 1 when a move replaced it or took it
 * out of the roots (nothing of it is there now), -1 when OUT is too small. */
int moves_forward(int k, const char *rel, int epoch, char *out, size_t size);

#endif
