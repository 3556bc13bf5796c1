/*
 * A trapped call that a read-only mount of the sandbox refuses: a write, create, remove, rename or mode
 * change of a path outside every writable root, whose directory (or, for a call that follows the last
 * link, whose existing target) lies on a read-only mount as the calling process sees it. The supervisor
 * records it as a typed denial (`filesystem.write`); the call itself goes on and fails as it would have.
 */
#ifndef ALEPH_CHANGES_REFUSED_H
#define ALEPH_CHANGES_REFUSED_H

#include <linux/types.h>
#include <sys/types.h>

/* Whether process PID's call (notification ID on LISTENER, still pending) naming ABS (absolute, as the
 * sandbox sees it) will meet a read-only mount: 1 yes, 0 no or unknown. A device, FIFO or socket, which a
 * read-only mount still lets be written, is never one. */
int write_refused(pid_t pid, __u64 id, int listener, const char *abs, int follows);

#endif
