/*
 * Protected paths that were absent when the launcher opened them: nothing is made in their place (no
 * placeholder in the command's view), and after the run each that exists is set aside.
 */
#ifndef ALEPH_AFTER_RUN_ABSENT_H
#define ALEPH_AFTER_RUN_ABSENT_H

#include <stdio.h>

/* The protected path REST (one or more components) below the directory DIRFD (kept open for the run; on
 * the host, never a clone) was absent; SHOWN is its absolute path. */
void absent_add(int dirfd, const char *rest, const char *shown);
/* After the run: each recorded path that exists now — or a component on its way that is now a symlink or
 * a file — is set aside (reported). */
void absent_check(FILE *report);

#endif
