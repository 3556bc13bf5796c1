/*
 * The bridge's event loop: one epoll set, each registered descriptor pointing at a `struct watch` that
 * says what it is, and objects retired during a batch of events freed only after it (a later event of the
 * same batch may still point at them).
 */
#ifndef ALEPH_BRIDGE_LOOP_H
#define ALEPH_BRIDGE_LOOP_H

#include <stdint.h>

enum watch_kind {
  W_DEAD,          /* retired in this batch */
  W_SIDE,          /* one side of a relayed connection (relay.c) */
  W_DIAL,          /* a connection being made: CONNECT to the proxy, or a published port (dial.c) */
  W_DIAL_TIMER,    /* how long a refused client may take to show whether it speaks HTTP (dial.c) */
  W_LISTEN_PROXY,  /* 127.0.0.1:PORT of the proxy variables: relayed to the proxy as is */
  W_LISTEN_EGRESS, /* a transparent port: CONNECT name:port for the synthetic address dialled */
  W_DNS_UDP,       /* 127.0.0.53:53 over UDP (dns-io.c) */
  W_LISTEN_DNS,    /* 127.0.0.53:53 over TCP */
  W_DNS_TCP,       /* one DNS-over-TCP client */
  W_PUBLISH,       /* the launcher's socket pair: host connections of published ports (publish.c) */
  W_REFUSED,       /* resets of connections nothing listened for (refused.c) */
};

struct watch {
  enum watch_kind kind;
};

/* What every part of the loop shares. */
struct bridge_ctx {
  int ep;
  const char *proxy_path; /* the proxy's Unix socket, or NULL */
};

/* Adds FD to the loop for EVENTS, its events going to W. -1 when epoll refuses. */
int watch_add(int ep, int fd, struct watch *w, uint32_t events);
void watch_mod(int ep, int fd, struct watch *w, uint32_t events);
/* Takes FD out of the loop and closes it. */
void watch_close(int ep, int fd);
/* Marks W dead now and frees MEMORY (which holds W) once the current batch is done. */
void retire(struct watch *w, void *memory);
/* Frees what was retired (the loop calls it after each batch). */
void retired_free(void);

#endif
