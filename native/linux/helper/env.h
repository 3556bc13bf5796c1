/*
 * The program's environment, read from a descriptor (--env-fd): it never passes through bwrap or this
 * helper's own environment.
 */
#ifndef ALEPH_HELPER_ENV_H
#define ALEPH_HELPER_ENV_H

/* Reads NUL-separated NAME=VALUE entries (at most 1 MiB) from FD (then closed) into an environment array. */
char **read_env(int fd);

#endif
