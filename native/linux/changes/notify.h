/*
 * The change recording's part inside the sandbox (helper, last step before exec): a seccomp filter whose
 * SECCOMP_RET_USER_NOTIF traps only the calls that can change a path (opens for writing or creating,
 * unlink, rename, mkdir, chmod, chown, …), and its listener handed to the launcher's supervisor
 * (supervise.c) over the socket the launcher passed down.
 */
#ifndef ALEPH_CHANGES_NOTIFY_H
#define ALEPH_CHANGES_NOTIFY_H

#include <stddef.h>

/* Installs the trapping filter and sends its listener over SOCK (SCM_RIGHTS); where the kernel cannot
 * (no user notification, a listener already in the chain), sends the errno alone, so the launcher records
 * why the run's changes are unrecorded. Closes SOCK. Never fails the run, unless DENY_SPAWN: then the
 * filter also traps process creation (the supervisor refuses it and reports the program), the main filter
 * does not refuse it, and a filter that cannot be installed is a set-up failure (die). */
void changes_hand_over(int sock, int deny_spawn);

/* The probe's exercise (run in a child of its own): the trapping filter installed, a trapped call of a
 * grandchild answered through its listener and let go on. "ok" or the step that failed, in BUF. */
const char *changes_probe(char *buf, size_t len);

#endif
