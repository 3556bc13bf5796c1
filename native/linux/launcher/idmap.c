/*
 * The user namespaces of the launcher's idmapped mounts (idmap.h; clone.c, --clone on a root host): one
 * per owner of the paths cloned, whose only mapping is that owner (and group) to the run's uid, so the
 * directory's owner appears as the run's uid inside the sandbox. Each is made by a child that holds it
 * while the maps are written (common/nschild.c); those children are reaped after the run.
 */
#define _GNU_SOURCE
#include "idmap.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../common/errors.h"
#include "../common/nschild.h"

/* A user namespace whose only mapping is owner → to, for idmapped mounts (one per owner, kept). */
static struct {
  uid_t owner;
  gid_t group;
  int fd;
} userns_cache[16];
static int nuserns;

static int make_idmap_userns(uid_t owner, gid_t group, long to);

int idmap_userns(uid_t owner, gid_t group, long to) {
  for (int i = 0; i < nuserns; i++)
    if (userns_cache[i].owner == owner && userns_cache[i].group == group) return userns_cache[i].fd;
  int fd = make_idmap_userns(owner, group, to);
  if (nuserns < 16) {
    userns_cache[nuserns].owner = owner;
    userns_cache[nuserns].group = group;
    userns_cache[nuserns++].fd = fd;
  }
  return fd;
}

/* The holders exit once released; nobody waits for that (about a millisecond here): they are reaped
 * after the run. Each has a stack of its own, since it shares this process's memory. */
static char holder_stacks[16][8192] __attribute__((aligned(16)));
static pid_t holders[16];
static int nholders;

static int make_idmap_userns(uid_t owner, gid_t group, long to) {
  if (nholders >= 16) die("launch: too many owners to map");
  struct ns_child c;
  if (ns_child_start(&c, CLONE_NEWUSER, NULL, holder_stacks[nholders], sizeof holder_stacks[0]) < 0)
    die("launch: cannot create a user namespace for an idmapped mount: %s", strerror(errno));
  holders[nholders++] = c.pid;
  char path[64], map[64];
  const char *files[3] = {"setgroups", "uid_map", "gid_map"};
  for (int i = 0; i < 3; i++) {
    if (i == 0) snprintf(map, sizeof map, "deny");
    else snprintf(map, sizeof map, "%u %ld 1", i == 1 ? (unsigned)owner : (unsigned)group, to);
    snprintf(path, sizeof path, "/proc/%d/%s", (int)c.pid, files[i]);
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0 || write(fd, map, strlen(map)) < 0) die("launch: writing %s: %s", path, strerror(errno));
    close(fd);
  }
  snprintf(path, sizeof path, "/proc/%d/ns/user", (int)c.pid);
  int ns = open(path, O_RDONLY | O_CLOEXEC);
  if (ns < 0) die("launch: open %s: %s", path, strerror(errno));
  ns_child_release(&c);
  return ns;
}

void idmap_reap(void) {
  for (int i = 0; i < nholders; i++)
    while (waitpid(holders[i], NULL, 0) < 0 && errno == EINTR) {
    }
}
