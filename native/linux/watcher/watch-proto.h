/*
 * What the change watcher (watcher.c) and a run's launcher (after-run/watch-client.c) say to each other,
 * one message per SOCK_SEQPACKET packet, on a socket pair the fork server makes for each run:
 *
 *   B + the writable roots' descriptors (SCM_RIGHTS)  begin: answered b TOKEN (u64), then one byte per root,
 *                                                     WATCH_READY or why the watcher cannot vouch for it yet
 *   E TOKEN (u64)                                     end (every process of the run is gone): answered with
 *                                                     e packets, each records of the entries changed since
 *                                                     TOKEN, then z and one byte: 0, or why none can be
 *                                                     trusted (events were lost)
 *   O FSID (8 bytes) LEN (u32) HANDLE                 a directory by its handle: answered o ERRNO (i32),
 *                                                     with an O_PATH descriptor when 0 (ESTALE: it is gone)
 *
 * A record: u32 its length, u64 the events' mask, 8 bytes fsid, u32 length + the directory's handle
 * (struct file_handle bytes), u16 length + the name, u16 count, then that many u32 length + object handle.
 */
#ifndef ALEPH_WATCHER_WATCH_PROTO_H
#define ALEPH_WATCHER_WATCH_PROTO_H

#include <stdint.h>

#define WATCH_PACKET 65536
#define WATCH_MAX_ROOTS 128

#define WATCH_HANDLE_MAX 128

/* A directory's or an object's file handle on filesystem FSID. */
struct whandle {
  uint64_t fsid;
  unsigned len;                           /* bytes of fh used: sizeof(struct file_handle) + handle_bytes */
  unsigned char fh[8 + WATCH_HANDLE_MAX]; /* struct file_handle */
};

/* A record's mask bit: not an event, but a `.git` file (a pointer to a git directory) the watcher knows of,
 * sent with every end, so the launcher looks at its ctime (a rewrite through a shared mapping whose close
 * comes after the run has no event in the run's window). */
#define WATCH_SWEEP (1ull << 40)

enum { WATCH_READY = 0, WATCH_SCANNING = 1, WATCH_TOO_MANY = 2, WATCH_BROKEN = 3, WATCH_LOST = 4 };

#endif
