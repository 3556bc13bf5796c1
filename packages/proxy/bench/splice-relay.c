/*
 * A reference point for proxy.bench.mjs, not part of the proxy: the cheapest relay Linux offers. It
 * accepts on 127.0.0.1 (port printed on stdout), reads one CONNECT request, dials the port given on the
 * command line without checking anything, answers 200 and then moves bytes both ways with splice(2)
 * through a pipe, so they never enter user space. If this relay does no better than the proxy on a
 * machine, the proxy's cost there is the kernel's two extra TCP endpoints and the competition for cores,
 * not its own copying.
 *
 * Build: cc -O2 -o splice-relay splice-relay.c     Run: splice-relay UPSTREAM_PORT
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define CHUNK (1 << 20)

/* One direction: socket -> pipe -> socket. */
struct flow {
  int from, to, pipe[2];
  size_t queued;
  int eof;
};

static void pump(struct flow *f, short revents) {
  if (!f->eof && f->queued < CHUNK && (revents & (POLLIN | POLLHUP | POLLERR))) {
    ssize_t n = splice(f->from, NULL, f->pipe[1], NULL, CHUNK - f->queued,
                       SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
    if (n > 0) f->queued += (size_t)n;
    else if (n == 0) f->eof = 1;
  }
  if (f->queued > 0) {
    ssize_t n = splice(f->pipe[0], NULL, f->to, NULL, f->queued, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
    if (n > 0) f->queued -= (size_t)n;
  }
  if (f->eof == 1 && f->queued == 0) {
    shutdown(f->to, SHUT_WR);
    f->eof = 2;
  }
}

static void relay(int client, int upstream) {
  struct flow up = {client, upstream, {-1, -1}, 0, 0}, down = {upstream, client, {-1, -1}, 0, 0};
  if (pipe2(up.pipe, O_NONBLOCK) != 0 || pipe2(down.pipe, O_NONBLOCK) != 0) return;
  fcntl(up.pipe[0], F_SETPIPE_SZ, CHUNK);
  fcntl(down.pipe[0], F_SETPIPE_SZ, CHUNK);
  fcntl(client, F_SETFL, O_NONBLOCK);
  fcntl(upstream, F_SETFL, O_NONBLOCK);
  while (up.eof != 2 || down.eof != 2) {
    struct pollfd p[2] = {{client, 0, 0}, {upstream, 0, 0}};
    if (!up.eof && up.queued < CHUNK) p[0].events |= POLLIN;
    if (down.queued > 0) p[0].events |= POLLOUT;
    if (!down.eof && down.queued < CHUNK) p[1].events |= POLLIN;
    if (up.queued > 0) p[1].events |= POLLOUT;
    if (poll(p, 2, 30000) <= 0) return; /* idle for 30 s, or an error: give up */
    pump(&up, p[0].revents);
    pump(&down, p[1].revents);
  }
}

static void serve(int client, int upstream_port) {
  char head[8192];
  size_t got = 0;
  char *end = NULL;
  while (end == NULL) {
    ssize_t n = read(client, head + got, sizeof head - 1 - got);
    if (n <= 0) return;
    got += (size_t)n;
    head[got] = 0;
    end = strstr(head, "\r\n\r\n");
    if (end == NULL && got == sizeof head - 1) return;
  }
  int upstream = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons((uint16_t)upstream_port)};
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (upstream < 0 || connect(upstream, (struct sockaddr *)&to, sizeof to) != 0) return;
  static const char ok[] = "HTTP/1.1 200 Connection Established\r\n\r\n";
  if (write(client, ok, sizeof ok - 1) != (ssize_t)(sizeof ok - 1)) return;
  size_t early = got - (size_t)(end + 4 - head); /* bytes the client sent after its request */
  if (early > 0 && write(upstream, end + 4, early) != (ssize_t)early) return;
  relay(client, upstream);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: splice-relay UPSTREAM_PORT\n");
    return 2;
  }
  int upstream_port = atoi(argv[1]);
  signal(SIGCHLD, SIG_IGN); /* children are reaped by the kernel */
  int listener = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in at = {.sin_family = AF_INET};
  at.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof at;
  if (listener < 0 || bind(listener, (struct sockaddr *)&at, sizeof at) != 0 || listen(listener, 128) != 0 ||
      getsockname(listener, (struct sockaddr *)&at, &len) != 0) {
    perror("splice-relay");
    return 1;
  }
  printf("%d\n", ntohs(at.sin_port));
  fflush(stdout);
  for (;;) {
    int client = accept(listener, NULL, NULL);
    if (client < 0) continue;
    if (fork() == 0) {
      close(listener);
      serve(client, upstream_port);
      _exit(0);
    }
    close(client);
  }
}
