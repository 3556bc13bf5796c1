/* Bringing a namespace's loopback up (loopback.h), with the interface ioctls. */
#define _GNU_SOURCE
#include "loopback.h"

#include <net/if.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

int loopback_up(void) {
  int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (s < 0) return -1;
  struct ifreq ifr;
  memset(&ifr, 0, sizeof ifr);
  strcpy(ifr.ifr_name, "lo");
  int ok = ioctl(s, SIOCGIFFLAGS, &ifr) == 0;
  /* Already up where the namespace comes with it (gVisor, whose SIOCSIFFLAGS is ENOTTY). */
  int up = ok && (ifr.ifr_flags & IFF_UP) != 0;
  ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
  ok = ok && (up || ioctl(s, SIOCSIFFLAGS, &ifr) == 0);
  close(s);
  return ok ? 0 : -1;
}
