/*
 * The launcher's report (`--report FILE`): one line `KIND PATH[: WHY]` for each thing the checks after
 * the run did (quarantined, removed, restored, unrestored, incomplete, failed), read by the
 * driver (packages/driver-linux/src/launch-report.ts).
 */
#ifndef ALEPH_COMMON_REPORT_H
#define ALEPH_COMMON_REPORT_H

#include <stdio.h>

/* The report at PATH, created (O_NOFOLLOW, mode 0600, truncated) only when its first line is written:
 * most runs report nothing, and a file costs an inode. */
FILE *report_open(const char *path);
/* Writes `KIND PATH[: WHY]` to REPORT (if any), a newline or tab in PATH shown as '?'. */
void report_line(FILE *report, const char *kind, const char *path, const char *why);
/* Writes `KIND A<TAB>B[<TAB>C]` to REPORT (if any), a newline or tab in A, B or C shown as '?'; C may be
 * NULL. */
void report_pair(FILE *report, const char *kind, const char *a, const char *b, const char *c);

/* From now on every KIND is written as PREFIX KIND (`earlier-quarantined …`: what the check of an interrupted
 * earlier run did, launcher/inflight.c); NULL: none again. */
void report_prefix(const char *prefix);
/* How many `failed` lines were reported so far (to REPORT or none): what could not be set aside. */
int report_failures(void);

#endif
