/*
 * The launcher's part of the change recording (issue 38): its options, and the hooks around PROGRAM.
 *   --changes DIR MAX_BYTES MAX_FILE_BYTES   record this run's changes into the store DIR
 *   --changes-root PATH                      a writable root opened with --open and checked (--check-root)
 *                                            whose changes are recorded; mounted at PATH inside
 * `@CHANGES` in PROGRAM's arguments is the socket the helper hands the trapping filter's listener over.
 */
#ifndef ALEPH_LAUNCHER_CHANGES_H
#define ALEPH_LAUNCHER_CHANGES_H

/* Reads a change option at ARGV[*I] (advancing *I past its values); 0 when it is not one. */
int changes_option(int argc, char **argv, int *i);
/* The replacement of `@CHANGES` (dies when there is no --changes). */
const char *changes_fd_arg(void);
/* Around PROGRAM: before it starts, once it started, and once it and its processes are gone. Nothing
 * without --changes. */
void changes_before(void);
void changes_started(void);
void changes_after(void);

#endif
