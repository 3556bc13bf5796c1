/*
 * The helper's set-up status, as the launcher hears it: a pipe whose writing end PROGRAM inherits as the
 * argument @STATUS (the helper's --status-fd), and whose reading end only the launcher holds. The helper
 * writes `started` on it just before it executes the command (close-on-exec: the command never holds it)
 * or `failed MESSAGE` when its set-up fails (common/errors.c); the first line decides, and the command
 * exists only after it. The launcher's report then says `setup started`, `setup failed: MESSAGE` or
 * `setup none` (the helper said nothing: bwrap failed before it, or it was killed), which the driver
 * believes instead of the exit status and stderr the command could forge.
 */
#ifndef ALEPH_LAUNCHER_SETUP_STATUS_H
#define ALEPH_LAUNCHER_SETUP_STATUS_H

#include <stdio.h>

/* Makes the pipe when PROG has an argument @STATUS, and replaces each with its writing end's number. */
void setup_status_open(char **prog);
/* The writing end (-1 without the pipe): PROGRAM's child reports its own set-up failures on it (stage.c). */
int setup_status_fd(void);
/* In the launcher once PROGRAM is forked: closes the writing end here. */
void setup_status_started(void);
/* After PROGRAM: reads the first line the helper wrote and reports `setup …` (nothing without the pipe). */
void setup_status_report(FILE *report);

#endif
