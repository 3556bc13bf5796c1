/*
 * Errors of every mode of aleph-sandbox-init: a set-up failure ends the process with status 125 and one
 * line "aleph-sandbox-init: …" on stderr (and, in the helper, on its status channel, which is what the
 * host believes: stderr is the command's too); numbers on the command line are read strictly.
 */
#ifndef ALEPH_COMMON_ERRORS_H
#define ALEPH_COMMON_ERRORS_H

/* Prints "aleph-sandbox-init: …" (and writes `failed …` to the status channel, if any) and exits 125. */
void die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
/* The helper's set-up status channel (--status-fd, launcher/setup-status.c): a pipe the launcher keeps
 * the reading end of, which the command never holds. From now on die() writes `failed MESSAGE` to FD as
 * well; -1: no channel (a forked child that must not speak for the helper). */
void status_channel(int fd);
/* Writes `started` to the status channel (if any): the set-up is done, the program is executed next. */
void status_started(void);
/* S as a decimal long; anything else (empty, trailing characters, out of range) dies naming WHAT. */
long parse_long(const char *s, const char *what);

#endif
