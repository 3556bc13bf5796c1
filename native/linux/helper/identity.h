/*
 * The program's identity in the sandbox: the unprivileged uid and gid it runs as (--uid/--gid; the host
 * side runs as root), with no capability left in any set and no way back to uid 0.
 */
#ifndef ALEPH_HELPER_IDENTITY_H
#define ALEPH_HELPER_IDENTITY_H

/* Becomes UID and GID: empties the bounding, ambient and inheritable capability sets and the
 * supplementary groups first, and checks uid 0 cannot be regained. With UID < 0 (a user namespace's own
 * uid) it only empties the capability sets (what bwrap kept for the bridge's sockets). */
void drop_identity(long uid, long gid);

#endif
