/*
 * One entry of the change journal, checked: the directory it names opened by its handle and placed, then
 * the rules of the check applied to what is there now.
 */
#ifndef ALEPH_AFTER_RUN_JOURNAL_ENTRY_H
#define ALEPH_AFTER_RUN_JOURNAL_ENTRY_H

#include "check-types.h"
#include "journal.h"

/* Checks entry K of LOG; ROOT_OF maps a root to the one whose check covers it (-1: not by the journal).
 * 0 when done (or not ours); -1 when the journal cannot be trusted for K's filesystem (a handle that does
 * not decode, a directory that cannot be placed). */
int check_entry(struct check *c, struct journal_log *log, struct jkey *k, const int *root_of);

/* The path of NAME in directory FD (through /proc/self/fd), for the report; OUT holds SIZE bytes. */
const char *entry_path(int fd, const char *name, char *out, size_t size);

#endif
