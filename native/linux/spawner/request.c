/*
 * A run's request to the fork server (request.h): read with bounds checked at every step, so a malformed
 * one is answered EINVAL; its blobs become sealed memfds, its streams connections to the driver.
 */
#define _GNU_SOURCE
#include "request.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

struct reader {
  const unsigned char *p, *end;
  int bad;
};

static uint32_t get_u32(struct reader *r) {
  if (r->end - r->p < 4) {
    r->bad = 1;
    return 0;
  }
  uint32_t v;
  memcpy(&v, r->p, 4);
  r->p += 4;
  return v;
}

static char *get_str(struct reader *r) {
  const unsigned char *nul = memchr(r->p, '\0', (size_t)(r->end - r->p));
  if (nul == NULL) {
    r->bad = 1;
    return NULL;
  }
  char *s = (char *)r->p;
  r->p = nul + 1;
  return s;
}

/* COUNT (at most 100000) strings as a NULL-terminated array; NULL when the reader went bad before. */
static char **get_strs(struct reader *r, uint32_t count) {
  if (count > 100000) r->bad = 1;
  char **strs = r->bad ? NULL : calloc(count + 1, sizeof *strs);
  for (uint32_t k = 0; strs != NULL && k < count && !r->bad; k++) strs[k] = get_str(r);
  return strs;
}

static int data_fd(const unsigned char *bytes, uint32_t len) {
  int fd = memfd_create("aleph-data", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return -1;
  for (uint32_t off = 0; off < len;) {
    ssize_t w = write(fd, bytes + off, len - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      close(fd);
      return -1;
    }
    off += (uint32_t)w;
  }
  fcntl(fd, F_ADD_SEALS, F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE);
  lseek(fd, 0, SEEK_SET);
  return fd;
}

int read_request(struct request *q, const unsigned char *msg, uint32_t len) {
  struct reader r = {msg, msg + len, 0};
  memset(q, 0, sizeof *q);
  q->id = get_u32(&r);
  q->flags = get_u32(&r);
  q->token = r.p;
  if (r.end - r.p < 16) return -1;
  r.p += 16;
  q->argc = get_u32(&r);
  if (q->argc == 0 || q->argc > 100000) r.bad = 1;
  q->argv = get_strs(&r, q->argc);
  uint32_t envc = r.bad ? 0 : get_u32(&r);
  q->envp = get_strs(&r, envc);
  q->cwd = r.bad ? NULL : get_str(&r);
  uint32_t nextra = r.bad ? 0 : get_u32(&r);
  q->nfds = 3;
  for (int k = 0; k < 3 + REQUEST_MAX_EXTRA; k++) q->fds[k] = -1;
  q->err = r.bad || nextra > REQUEST_MAX_EXTRA || q->argv == NULL || q->envp == NULL ? EINVAL : 0;
  for (uint32_t k = 0; q->err == 0 && k < nextra; k++) {
    uint32_t n = get_u32(&r);
    if (r.bad || (uint32_t)(r.end - r.p) < n) {
      q->err = EINVAL;
      break;
    }
    q->fds[q->nfds] = data_fd(r.p, n);
    if (q->fds[q->nfds++] < 0) q->err = errno;
    r.p += n;
  }
  return 0;
}

/* A connection to the driver for stream STREAM of the run with TOKEN; -1 with errno set on failure. */
static int connect_stream(const char *sock_path, const unsigned char *token, uint32_t stream) {
  int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) return -1;
  struct sockaddr_un a = {.sun_family = AF_UNIX};
  if (strlen(sock_path) >= sizeof a.sun_path) {
    close(s);
    errno = ENAMETOOLONG;
    return -1;
  }
  strcpy(a.sun_path, sock_path);
  unsigned char hello[20];
  memcpy(hello, token, 16);
  memcpy(hello + 16, &stream, 4);
  if (connect(s, (struct sockaddr *)&a, sizeof a) < 0 || write(s, hello, sizeof hello) != (ssize_t)sizeof hello) {
    int e = errno;
    close(s);
    errno = e;
    return -1;
  }
  return s;
}

void connect_stdio(struct request *q, const char *sock_path) {
  if (q->err == 0) {
    q->fds[0] = (q->flags & 1) ? connect_stream(sock_path, q->token, 0) : open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (q->fds[0] < 0) q->err = errno;
  }
  for (uint32_t s = 1; q->err == 0 && s <= 2; s++) {
    q->fds[s] = connect_stream(sock_path, q->token, s);
    if (q->fds[s] < 0) q->err = errno;
  }
}
