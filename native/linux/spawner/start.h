/*
 * Starting one run of the fork server from its request, answered S (started) or F (could not start).
 */
#ifndef ALEPH_SPAWNER_START_H
#define ALEPH_SPAWNER_START_H

#include <stdint.h>

/* Starts the run MSG (LEN bytes, without its length prefix) asks for, its streams connected to the
 * driver's socket SOCK_PATH; answers S or F (nothing for a message too short to be answered). */
void start_run(const unsigned char *msg, uint32_t len, const char *sock_path);

#endif
