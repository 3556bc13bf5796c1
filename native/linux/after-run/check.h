/*
 * The check after the run: what a command left in the writable roots must not act on the host. The
 * launcher names the roots (--check-root) and what was read-only during the run before it starts PROGRAM,
 * waits for PROGRAM through it (a journal is drained meanwhile), and runs it once every process of the run
 * is gone. The details: check.c.
 */
#ifndef ALEPH_AFTER_RUN_CHECK_H
#define ALEPH_AFTER_RUN_CHECK_H

#include <stdio.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>

/* A writable root to check: FD (any descriptor of it, on the host, not a clone), shown as PATH. */
void check_root(int fd, const char *path);
/* ST was mounted read-only for the run: it, and what is below it, could not change through the run. */
void check_exempt(const struct stat *st);
/* --journal: keep a change journal of the roots' filesystems (fanotify; a root host), else walk them. */
void check_use_journal(void);
/* Where the host cannot keep a change journal (an unprivileged user): the change watcher's connection FD
 * (watcher/watcher.h), given to this run by the fork server. */
void check_use_watcher(int fd);
/* Before PROGRAM starts: the known git directories read (STATE_FD, or -1), the journal started. */
void check_prepare(int state_fd);
/* Waits for PROGRAM (PID), draining the journal meanwhile; its wait status. */
int check_wait(pid_t pid);
/* For a caller with its own wait loop (published ports): the journal's descriptor to poll (-1: none), and
 * what to do when it is readable. */
int check_poll_fd(void);
void check_poll_ready(void);
/* Once every process of the run is gone (it started at START): the absent protected paths, then every
 * root, by the journal or the complete walk; what was done is reported to REPORT (may be NULL). */
void check_after(const struct timespec *start, FILE *report);
/* After check_prepare: each root checked whole (not beneath another), FN(PATH, DEV, INO, CTX). */
void check_each_root(void (*fn)(const char *path, dev_t dev, ino_t ino, void *ctx), void *ctx);
/* An interrupted earlier run's check, before this run's options are read: the root at PATH (opened again
 * now, no symlink on the way) walked whole, what changed since SINCE (that run's start) checked as after a
 * run, with STATE_FD's known git directories; reported to REPORT. 0 when done (a root that is gone has
 * nothing left to check); -1 when it could not be, *WHY saying why. */
int check_earlier(int state_fd, const char *path, const struct timespec *since, FILE *report, const char **why);

#endif
