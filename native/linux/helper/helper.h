/*
 * The helper proper: the last step before the sandboxed program runs, inside bwrap's namespaces (or, with
 * `--direct`, on the host itself in tier 3).
 */
#ifndef ALEPH_HELPER_HELPER_H
#define ALEPH_HELPER_HELPER_H

/* `aleph-sandbox-init [--direct] OPTIONS -- PROGRAM ARGS…`: sets the sandbox up and execs PROGRAM; returns
 * only when the exec failed (127: not found, else 126). */
int helper_main(int argc, char **argv);

#endif
