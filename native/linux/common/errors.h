/*
 * Errors of every mode of aleph-sandbox-init: a set-up failure ends the process with status 125 and one
 * line "aleph-sandbox-init: …" on stderr; numbers on the command line are read strictly.
 */
#ifndef ALEPH_COMMON_ERRORS_H
#define ALEPH_COMMON_ERRORS_H

/* Prints "aleph-sandbox-init: …" and exits 125. */
void die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
/* S as a decimal long; anything else (empty, trailing characters, out of range) dies naming WHAT. */
long parse_long(const char *s, const char *what);

#endif
