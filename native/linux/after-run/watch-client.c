/*
 * The run's side of the change watcher (watch-client.h). Every answer is checked for its shape; one that
 * does not parse makes the run's roots walked (the caller fails closed).
 */
#define _GNU_SOURCE
#include "watch-client.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "../common/fdpass.h"
#include "../watcher/watch-proto.h"

static int send_packet(int sock, const void *buf, size_t len, const int *fds, int nfds) {
  return fdpass_send(sock, buf, len, fds, nfds);
}

/* One packet into BUF; a descriptor passed with it into *FD (-1: none). */
static ssize_t receive(int sock, void *buf, size_t size, int *fd) {
  int n;
  ssize_t got = fdpass_recv(sock, buf, size, fd, 1, &n);
  if (n == 0) *fd = -1;
  return got;
}

int watch_begin(int sock, const int *fds, int n, uint64_t *token, unsigned char *states) {
  unsigned char buf[1 + 8 + WATCH_MAX_ROOTS];
  int fd;
  if (n > WATCH_MAX_ROOTS || send_packet(sock, "B", 1, fds, n) < 0) return -1;
  ssize_t got = receive(sock, buf, sizeof buf, &fd);
  if (fd >= 0) close(fd);
  if (got != 9 + n || buf[0] != 'b') return -1;
  memcpy(token, buf + 1, 8);
  memcpy(states, buf + 9, (size_t)n);
  return 0;
}

/* A handle at P (LEFT bytes left): its fsid, bytes and length; its size, or 0 when it does not fit. */
static size_t handle_at(const unsigned char *p, size_t left, uint64_t *fsid, const void **fh, unsigned *len) {
  uint32_t l;
  if (left < 12) return 0;
  memcpy(fsid, p, 8);
  memcpy(&l, p + 8, 4);
  if (l < 8 || l > 136 || left - 12 < l) return 0;
  *fh = p + 12;
  *len = l;
  return 12 + l;
}

/* The records of one e packet; -1 when one does not parse. */
static int records(const unsigned char *p, size_t len, void (*fn)(const struct watch_record *r, void *ctx), void *ctx) {
  while (len > 0) {
    uint32_t rl;
    if (len < 4) return -1;
    memcpy(&rl, p, 4);
    if (rl < 4 + 8 || rl > len) return -1;
    struct watch_record r;
    size_t at = 4, h;
    memcpy(&r.mask, p + at, 8);
    at += 8;
    if ((h = handle_at(p + at, rl - at, &r.fsid, &r.dfh, &r.dlen)) == 0) return -1;
    at += h;
    uint16_t nl, no;
    if (rl - at < 2) return -1;
    memcpy(&nl, p + at, 2);
    at += 2;
    if (nl > 255 || rl - at < (size_t)nl + 2) return -1;
    memcpy(r.name, p + at, nl);
    r.name[nl] = '\0';
    at += nl;
    memcpy(&no, p + at, 2);
    at += 2;
    r.nobj = no;
    r.objs = p + at;
    for (int i = 0; i < no; i++) {
      uint64_t f;
      const void *fh;
      unsigned l;
      if ((h = handle_at(p + at, rl - at, &f, &fh, &l)) == 0) return -1;
      at += h;
    }
    if (at != rl || memchr(r.name, '/', nl) != NULL || strlen(r.name) != nl) return -1;
    fn(&r, ctx);
    p += rl;
    len -= rl;
  }
  return 0;
}

int watch_end(int sock, uint64_t token, void (*fn)(const struct watch_record *r, void *ctx), void *ctx, int *lost) {
  static unsigned char buf[WATCH_PACKET];
  unsigned char msg[9] = {'E'};
  memcpy(msg + 1, &token, 8);
  if (send_packet(sock, msg, sizeof msg, NULL, 0) < 0) return -1;
  for (;;) {
    int fd;
    ssize_t got = receive(sock, buf, sizeof buf, &fd);
    if (fd >= 0) close(fd);
    if (got < 1) return -1;
    if (buf[0] == 'z') {
      *lost = got != 2 || buf[1] != 0;
      return 0;
    }
    if (buf[0] != 'e' || records(buf + 1, (size_t)got - 1, fn, ctx) < 0) return -1;
  }
}

int watch_open_dir(int sock, uint64_t fsid, const void *fh, unsigned len) {
  unsigned char msg[13 + 136], out[8];
  if (len > 136) {
    errno = EINVAL;
    return -1;
  }
  uint32_t l = len;
  msg[0] = 'O';
  memcpy(msg + 1, &fsid, 8);
  memcpy(msg + 9, &l, 4);
  memcpy(msg + 13, fh, len);
  int fd;
  if (send_packet(sock, msg, 13 + len, NULL, 0) < 0) return -1;
  ssize_t got = receive(sock, out, sizeof out, &fd);
  int32_t err;
  if (got != 5 || out[0] != 'o') {
    if (fd >= 0) close(fd);
    errno = EIO;
    return -1;
  }
  memcpy(&err, out + 1, 4);
  if (err == 0 && fd >= 0) return fd;
  if (fd >= 0) close(fd);
  errno = err != 0 ? err : EIO;
  return -1;
}
