/*
 * The change watcher's loop (watch-loop.h). Each connection is one run:
 *   - at B (begin), the events queued so far are read and the marking caught up (for a while: a tree still
 *     being marked the first time is not vouched for), so every directory made before the run's token is
 *     marked; the run's roots are added when new;
 *   - while any run is under way, events are logged (watch-log.c), and they are read whenever the group
 *     has some, so its bounded queue (an unprivileged group's) rarely fills; when it does, every run under
 *     way is told its events were lost;
 *   - at E (end: every process of the run is gone, so every event of it is queued), the events are read,
 *     and the entries touched since the token are sent, then whether events were lost since; what the log
 *     keeps for the run is dropped when it hangs up;
 *   - O opens a marked directory by its handle.
 */
#define _GNU_SOURCE
#include "watch-loop.h"

#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/fdpass.h"
#include "watch-events.h"
#include "watch-log.h"
#include "watch-proto.h"
#include "watch-table.h"
#include "watch-tree.h"

#define MAX_CLIENTS 256
#define BEGIN_BUDGET_US 30000
#define SLICE_US 20000

struct client {
  int fd;
  int active;
  uint64_t token;
};
static struct client clients[MAX_CLIENTS];
static int nclients;

static void send_packet(int fd, const void *buf, size_t len, int pass) {
  fdpass_send(fd, buf, len, &pass, pass >= 0 ? 1 : 0);
}

static int any_active(void) {
  for (int i = 0; i < nclients; i++)
    if (clients[i].active) return 1;
  return 0;
}

static void begin(int c, int *fds, int nfds) {
  watch_drain();
  watch_scan(BEGIN_BUDGET_US);
  watch_drain(); /* the events that place what the marking could not find */
  watch_scan(BEGIN_BUDGET_US / 3);
  if (watch_unlocated()) { /* a directory seen made but never placed: unmarked somewhere */
    watch_lost_seq = ++watch_seq;
    watch_rebuild();
  }
  unsigned char out[1 + 8 + WATCH_MAX_ROOTS];
  out[0] = 'b';
  clients[c].active = 1;
  clients[c].token = watch_seq;
  watch_epoch = watch_seq;
  watch_log_on = 1;
  memcpy(out + 1, &watch_seq, 8);
  for (int i = 0; i < nfds; i++) {
    int r = watch_root(fds[i]);
    out[9 + i] = (unsigned char)(r < 0 ? WATCH_BROKEN : watch_root_state(r));
  }
  send_packet(clients[c].fd, out, 9 + (size_t)nfds, -1);
}

static size_t put_handle(unsigned char *p, const struct whandle *h) {
  uint32_t len = h->len;
  memcpy(p, &h->fsid, 8);
  memcpy(p + 8, &len, 4);
  memcpy(p + 12, h->fh, len);
  return 12 + len;
}

/* Entry E as a run that began at SINCE sees it, as a record at P; its length. */
static size_t put_record(unsigned char *p, const struct wentry *e, uint64_t since) {
  size_t at = 4;
  uint64_t mask = watch_log_mask(e, since);
  memcpy(p + at, &mask, 8);
  at += 8;
  at += put_handle(p + at, &e->dir);
  uint16_t nlen = (uint16_t)strlen(e->name), nobj = 0;
  memcpy(p + at, &nlen, 2);
  memcpy(p + at + 2, e->name, nlen);
  at += 2 + nlen;
  size_t count_at = at;
  at += 2;
  for (const struct wseg *g = e->segs; g != NULL && g->first_seq > since; g = g->next)
    for (const struct wobj *o = g->objs; o != NULL && nobj < 16; o = o->next, nobj++) at += put_handle(p + at, &o->h);
  memcpy(p + count_at, &nobj, 2);
  uint32_t len = (uint32_t)at;
  memcpy(p, &len, 4);
  return at;
}

/* A sweep record for the `.git` in directory DIR at P; its length. */
static size_t put_sweep(unsigned char *p, const struct whandle *dir) {
  size_t at = 4;
  uint64_t mask = WATCH_SWEEP;
  memcpy(p + at, &mask, 8);
  at += 8;
  at += put_handle(p + at, dir);
  uint16_t nlen = 4, nobj = 0;
  memcpy(p + at, &nlen, 2);
  memcpy(p + at + 2, ".git", 4);
  at += 6;
  memcpy(p + at, &nobj, 2);
  at += 2;
  uint32_t len = (uint32_t)at;
  memcpy(p, &len, 4);
  return at;
}

static void prune(void) {
  uint64_t oldest = watch_seq;
  for (int i = 0; i < nclients; i++)
    if (clients[i].active && clients[i].token < oldest) oldest = clients[i].token;
  watch_log_prune(oldest);
  watch_tree_prune(oldest);
}

static void end(int c, const unsigned char *in, size_t len) {
  static unsigned char out[WATCH_PACKET];
  uint64_t since = clients[c].token;
  if (len >= 9) memcpy(&since, in + 1, 8);
  if (since > clients[c].token) since = clients[c].token; /* never later than its own begin */
  watch_drain();
  size_t at = 1;
  out[0] = 'e';
  for (const struct wentry *e = watch_log_next(NULL, since); e != NULL; e = watch_log_next(e, since)) {
    if (at + 4096 + 16 * 160 > sizeof out) {
      send_packet(clients[c].fd, out, at, -1);
      at = 1;
    }
    at += put_record(out + at, e, since);
  }
  int ngit, gitlost;
  const struct whandle *git = wt_gitfiles(&ngit, &gitlost);
  for (int i = 0; i < ngit; i++) { /* every `.git` file known, to be swept by ctime */
    if (at + 4096 > sizeof out) {
      send_packet(clients[c].fd, out, at, -1);
      at = 1;
    }
    at += put_sweep(out + at, &git[i]);
  }
  if (at > 1) send_packet(clients[c].fd, out, at, -1);
  unsigned char z[2] = {'z', watch_lost_seq > since || gitlost ? WATCH_LOST : WATCH_READY};
  send_packet(clients[c].fd, z, 2, -1);
  /* The run stays under way until it hangs up: it opens the directories of its entries next, and one gone
   * since its begin must still be known as gone (ESTALE), not unknown. */
}

static void open_handle(int c, const unsigned char *in, size_t len) {
  struct whandle h;
  uint32_t hl = 0;
  int32_t err = EINVAL;
  int fd = -1;
  if (len >= 13) memcpy(&hl, in + 9, 4);
  if (len >= 13 && hl <= sizeof h.fh && len == 13 + (size_t)hl) {
    memcpy(&h.fsid, in + 1, 8);
    h.len = hl;
    memcpy(h.fh, in + 13, hl);
    watch_drain();
    fd = watch_open(&h);
    err = fd < 0 ? errno : 0;
  }
  unsigned char out[5] = {'o'};
  memcpy(out + 1, &err, 4);
  send_packet(clients[c].fd, out, 5, fd);
  if (fd >= 0) close(fd);
}

/* One packet of connection C; -1 when it closed. */
static int serve(int c) {
  static unsigned char in[4096];
  int fds[WATCH_MAX_ROOTS], nfds;
  ssize_t n = fdpass_recv(clients[c].fd, in, sizeof in, fds, WATCH_MAX_ROOTS, &nfds);
  if (n <= 0) {
    for (int i = 0; i < nfds; i++) close(fds[i]);
    return -1;
  }
  if (in[0] == 'B') begin(c, fds, nfds);
  else {
    for (int i = 0; i < nfds; i++) close(fds[i]);
    if (in[0] == 'E') end(c, in, (size_t)n);
    else if (in[0] == 'O') open_handle(c, in, (size_t)n);
  }
  return 0;
}

static void drop_client(int c) {
  close(clients[c].fd);
  clients[c] = clients[--nclients];
  prune();
}

/* A run's connection, arrived on CTL; -1 when the fork server is gone. */
static int accept_client(int ctl) {
  unsigned char b;
  int fd, nfd;
  ssize_t n = fdpass_recv(ctl, &b, 1, &fd, 1, &nfd);
  if (n < 0 && errno == EMSGSIZE) return 0; /* its descriptor could not be taken (out of descriptors) */
  if (n <= 0) return -1;
  if (nfd == 1 && nclients < MAX_CLIENTS) clients[nclients++] = (struct client){.fd = fd};
  else if (nfd == 1) close(fd); /* the launcher walks */
  return 0;
}

int watch_loop(int ctl) {
  watch_tree_init();
  struct pollfd p[2 + MAX_CLIENTS];
  for (;;) {
    watch_log_on = any_active();
    int pending = watch_scan(SLICE_US);
    p[0] = (struct pollfd){.fd = ctl, .events = POLLIN};
    p[1] = (struct pollfd){.fd = watch_group, .events = POLLIN};
    for (int i = 0; i < nclients; i++) p[2 + i] = (struct pollfd){.fd = clients[i].fd, .events = POLLIN};
    int ready = poll(p, 2 + (nfds_t)nclients, pending ? 0 : -1);
    if (ready < 0 && errno != EINTR) return 1;
    if (ready <= 0) continue;
    if (p[1].revents & POLLIN) watch_drain();
    for (int i = nclients - 1; i >= 0; i--)
      if (p[2 + i].revents & (POLLIN | POLLHUP | POLLERR) && serve(i) < 0) drop_client(i);
    if ((p[0].revents & (POLLIN | POLLHUP | POLLERR)) && accept_client(ctl) < 0) return 0;
  }
}
