/*
 * The program's identity in the sandbox: the unprivileged uid and gid it runs as (--uid/--gid; the host
 * side runs as root), or the uid it has (tier 2's user namespace, tier 3's host), with no capability left
 * in any set and no way back to uid 0.
 */
#ifndef ALEPH_HELPER_IDENTITY_H
#define ALEPH_HELPER_IDENTITY_H

/* Becomes UID and GID (nothing when UID < 0): empties the bounding, ambient and inheritable capability
 * sets and the supplementary groups first, and checks uid 0 cannot be regained. */
void drop_identity(long uid, long gid);
/* Keeps the uid and drops every capability (without --uid: tier 2, where the helper kept CAP_SYS_RESOURCE
 * and CAP_SETPCAP to set its namespace's limits, and tier 3): securebits that make uid 0 ordinary on execve,
 * the bounding set (where CAP_SETPCAP allows), the ambient, inheritable, permitted and effective sets,
 * root's supplementary groups; then checks that none is left. */
void drop_capabilities(void);

#endif
