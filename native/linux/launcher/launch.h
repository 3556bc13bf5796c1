/*
 * The launcher: the host side of a run (`aleph-sandbox-init --launch OPTIONS -- PROGRAM ARGS…`), started
 * by the driver or, in-process, by its fork server.
 */
#ifndef ALEPH_LAUNCHER_LAUNCH_H
#define ALEPH_LAUNCHER_LAUNCH_H

/* Set by the fork server when it put this launcher in a network namespace of its pool (netpool.c). */
extern int launch_joined_net;

/* Runs the launcher on ARGV (ARGV[1] is --launch); its exit status, PROGRAM's. */
int launch_main(int argc, char **argv);

#endif
