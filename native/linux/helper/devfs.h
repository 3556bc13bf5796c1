/*
 * The sandbox's /dev on a root host (`--dev-at DEST`), made by the helper in place of bwrap's --dev.
 */
#ifndef ALEPH_HELPER_DEVFS_H
#define ALEPH_HELPER_DEVFS_H

/* On the directory DEST_FD (at DEST), the sandbox's /dev. */
void make_dev(int dest_fd, const char *dest);

#endif
