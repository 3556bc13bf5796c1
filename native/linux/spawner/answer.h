/*
 * The fork server's answers to the driver, one line each on stdout: S (started), F (could not start) and
 * E (exited).
 */
#ifndef ALEPH_SPAWNER_ANSWER_H
#define ALEPH_SPAWNER_ANSWER_H

/* Writes one answer line (under 128 bytes); exits 0 when the driver is gone. */
void answer(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
