/*
 * A run's side of the change watcher (watcher/watcher.h, watcher/watch-proto.h): begin, end with the entries
 * changed since, and directories opened by handle.
 */
#ifndef ALEPH_AFTER_RUN_WATCH_CLIENT_H
#define ALEPH_AFTER_RUN_WATCH_CLIENT_H

#include <stdint.h>

/* One entry changed: its events' MASK, its directory (FSID and struct file_handle bytes DFH, DLEN long),
 * its NAME, and NOBJ object handles (OBJS: each u64 fsid, u32 length, bytes). */
struct watch_record {
  uint64_t mask, fsid;
  const void *dfh;
  unsigned dlen;
  char name[256];
  int nobj;
  const unsigned char *objs;
};

/* Begins: the watcher vouches for root I (of the N descriptors FDS) when STATES[I] is 0. -1 when it does
 * not answer. */
int watch_begin(int sock, const int *fds, int n, uint64_t *token, unsigned char *states);
/* Ends: FN is called for each entry changed since TOKEN; *LOST set when events were lost. -1 when the
 * answer is broken or missing. */
int watch_end(int sock, uint64_t token, void (*fn)(const struct watch_record *r, void *ctx), void *ctx, int *lost);
/* An O_PATH descriptor of the directory with handle FH (LEN bytes) on filesystem FSID, or -1 with errno. */
int watch_open_dir(int sock, uint64_t fsid, const void *fh, unsigned len);

#endif
