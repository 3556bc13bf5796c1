/*
 * The new mount API as the helper uses it inside the sandbox: a detached tmpfs made with
 * fsopen/fsconfig/fsmount, and a detached mount attached on a directory's descriptor (move_mount).
 */
#ifndef ALEPH_HELPER_MOUNT_API_H
#define ALEPH_HELPER_MOUNT_API_H

/* Attaches the detached mount SRC on DEST_FD (DEST names it in messages). */
void attach(int src, int dest_fd, const char *dest);
/* A detached tmpfs of MODE and SIZE with mount attributes ATTRS. */
int make_tmpfs(const char *mode, const char *size, unsigned attrs);

#endif
