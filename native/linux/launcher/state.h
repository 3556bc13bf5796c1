/*
 * The launcher's state directory (--state, ~/.aleph/run): per-uid locks, per-root stub records and locks,
 * parked stubs and the guard's snapshots live there, opened beneath its descriptor.
 */
#ifndef ALEPH_LAUNCHER_STATE_H
#define ALEPH_LAUNCHER_STATE_H

/* The state directory's descriptor, -1 without --state. */
extern int state_fd;
/* Its path (no symlink on the way), NULL without --state. */
extern const char *state_path;

/* Opens the state directory PATH (no symlink on the way); dies when it cannot. */
void state_open(const char *path);
/* NAME under the state directory, opened read-write and created (mode 0600, never through a symlink),
 * with FLAGS added; dies when it cannot. */
int state_file(const char *name, int flags);

#endif
