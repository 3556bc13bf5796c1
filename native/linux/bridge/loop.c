/*
 * The event loop's registry (loop.h): epoll registrations that point at watches, and deferred frees.
 */
#define _GNU_SOURCE
#include "loop.h"

#include <stdlib.h>
#include <sys/epoll.h>
#include <unistd.h>

#define MAX_RETIRED 1024

static void *graveyard[MAX_RETIRED];
static int nretired;

int watch_add(int ep, int fd, struct watch *w, uint32_t events) {
  struct epoll_event ev = {.events = events, .data.ptr = w};
  return epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
}

void watch_mod(int ep, int fd, struct watch *w, uint32_t events) {
  struct epoll_event ev = {.events = events, .data.ptr = w};
  epoll_ctl(ep, EPOLL_CTL_MOD, fd, &ev);
}

void watch_close(int ep, int fd) {
  if (fd < 0) return;
  epoll_ctl(ep, EPOLL_CTL_DEL, fd, NULL);
  close(fd);
}

void retire(struct watch *w, void *memory) {
  w->kind = W_DEAD;
  if (nretired == MAX_RETIRED) abort(); /* a batch of 64 events retires at most two objects each */
  graveyard[nretired++] = memory;
}

void retired_free(void) {
  for (int i = 0; i < nretired; i++) free(graveyard[i]);
  nretired = 0;
}
