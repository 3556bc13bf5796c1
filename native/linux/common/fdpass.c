/* Packets with descriptors (fdpass.h). */
#define _GNU_SOURCE
#include "fdpass.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int fdpass_send(int sock, const void *buf, size_t len, const int *fds, int nfds) {
  char cbuf[CMSG_SPACE(sizeof(int) * FDPASS_MAX)];
  struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};
  struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
  if (nfds > FDPASS_MAX) return errno = EINVAL, -1;
  if (nfds > 0) {
    mh.msg_control = cbuf;
    mh.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
    struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
    memcpy(CMSG_DATA(cm), fds, sizeof(int) * (size_t)nfds);
  }
  ssize_t n;
  while ((n = sendmsg(sock, &mh, MSG_NOSIGNAL)) < 0 && errno == EINTR) {
  }
  return n == (ssize_t)len ? 0 : -1;
}

ssize_t fdpass_recv(int sock, void *buf, size_t size, int *fds, int maxfds, int *nfds) {
  char cbuf[CMSG_SPACE(sizeof(int) * FDPASS_MAX)];
  struct iovec iov = {.iov_base = buf, .iov_len = size};
  struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof cbuf};
  ssize_t n;
  while ((n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR) {
  }
  *nfds = 0;
  for (struct cmsghdr *cm = n < 0 ? NULL : CMSG_FIRSTHDR(&mh); cm != NULL; cm = CMSG_NXTHDR(&mh, cm)) {
    if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS) continue;
    int k = (int)((cm->cmsg_len - CMSG_LEN(0)) / sizeof(int));
    for (int i = 0; i < k; i++) {
      int got;
      memcpy(&got, CMSG_DATA(cm) + (size_t)i * sizeof(int), sizeof got);
      if (*nfds < maxfds) fds[(*nfds)++] = got;
      else close(got);
    }
  }
  if (n >= 0 && (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC))) {
    while (*nfds > 0) close(fds[--*nfds]);
    return errno = EMSGSIZE, -1;
  }
  return n;
}
