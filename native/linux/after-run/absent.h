/*
 * Protected paths that were absent when the launcher opened them: nothing is made in their place (no
 * placeholder in the command's view), and after the run each that exists is set aside.
 */
#ifndef ALEPH_AFTER_RUN_ABSENT_H
#define ALEPH_AFTER_RUN_ABSENT_H

#include <stddef.h>
#include <stdio.h>

/* The protected path REST (one or more components) below the directory DIRFD (kept open for the run; on
 * the host, never a clone) was absent; SHOWN is its absolute path, the first ROOT_LEN characters of which
 * are the path of the root it lies in (for the record of a run in progress, launcher/inflight.c). */
void absent_add(int dirfd, const char *rest, const char *shown, size_t root_len);
/* Each recorded path: FN(SHOWN, ROOT_LEN, CTX). */
void absent_each(void (*fn)(const char *shown, size_t root_len, void *ctx), void *ctx);
/* An interrupted earlier run's absent path SHOWN (its root the first ROOT_LEN characters), checked as
 * absent_check does, component by component from the root opened again now (no symlink on the way; a
 * root that is gone has nothing to check). 0 when done, -1 when the root could not be opened. */
int absent_check_shown(const char *shown, size_t root_len, FILE *report);
/* After the run: each recorded path that exists now — or a component on its way that is now a symlink or
 * a file — is set aside (reported). */
void absent_check(FILE *report);

#endif
