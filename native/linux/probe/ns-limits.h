/*
 * The probe of the namespace limits the helper sets in tier 2 (helper/ns-limits.c), each tried in a user
 * namespace of a child's own, as the helper would: pid_max of a PID namespace of its own (Linux 6.14+), and
 * max_inotify_instances of the user namespace. Each says "ok", or what failed.
 */
#ifndef ALEPH_PROBE_NS_LIMITS_H
#define ALEPH_PROBE_NS_LIMITS_H

#include <stddef.h>

/* pid_max: a child in a new user and PID namespace sets it to 301 and reads it back; the host's must not
 * change. Not tried at all before Linux 6.14, where pid_max is the host's one value. */
const char *pid_max_exercise(char *buf, size_t len);
/* max_inotify_instances: a child in a new user namespace sets it to 1 and reads it back; the host's must
 * not change. */
const char *userns_limits_exercise(char *buf, size_t len);

#endif
