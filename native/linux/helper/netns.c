/* The helper's own network namespace (netns.h): unshare(CLONE_NEWNET), then `lo` up. */
#define _GNU_SOURCE
#include "netns.h"

#include <errno.h>
#include <sched.h>
#include <string.h>

#include "../common/errors.h"
#include "../common/loopback.h"

void enter_own_netns(void) {
  if (unshare(CLONE_NEWNET) < 0) die("a network namespace for the bridge: unshare: %s", strerror(errno));
  if (loopback_up() < 0) die("a network namespace for the bridge: cannot bring its loopback up: %s", strerror(errno));
}
