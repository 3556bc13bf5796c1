/*
 * The user namespaces of the launcher's idmapped mounts (launch.c, --clone on a root host): one per owner
 * of the paths cloned, whose only mapping is that owner (and group) to the run's uid, so the directory's
 * owner appears as the run's uid inside the sandbox. Each is made by a child that holds it while the maps
 * are written; those children are reaped after the run.
 */
#include "common.h"

#include <sched.h>

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

/* The child that holds a new user namespace while its maps are written: it shares this process's memory
 * (CLONE_VM, its own small stack), so making it copies no page tables, and it exits once SYNC's write end
 * is closed. Nobody waits for that exit (about a millisecond here): the holders are reaped after the run. */
static char holder_stacks[16][8192] __attribute__((aligned(16)));
static pid_t holders[16];
static int nholders;

static int userns_holder(void *arg) {
  int *sync = arg;
  char b;
  close(sync[1]); /* its own copy of the descriptor table: only this process's end would keep it open */
  while (read(sync[0], &b, 1) < 0 && errno == EINTR) {
  }
  _exit(0);
}

static int make_idmap_userns(uid_t owner, gid_t group, long to) {
  static int syncs[16][2];
  if (nholders >= 16) die("launch: too many owners to map");
  int *sync = syncs[nholders];
  if (pipe2(sync, O_CLOEXEC) < 0) die("launch: pipe: %s", strerror(errno));
  char *stack = holder_stacks[nholders];
  pid_t c = clone(userns_holder, stack + sizeof holder_stacks[0], CLONE_VM | CLONE_NEWUSER | SIGCHLD, sync);
  if (c < 0) die("launch: cannot create a user namespace for an idmapped mount: %s", strerror(errno));
  holders[nholders++] = c;
  char path[64], map[64];
  const char *files[3] = {"setgroups", "uid_map", "gid_map"};
  for (int i = 0; i < 3; i++) {
    if (i == 0) snprintf(map, sizeof map, "deny");
    else snprintf(map, sizeof map, "%u %ld 1", i == 1 ? (unsigned)owner : (unsigned)group, to);
    snprintf(path, sizeof path, "/proc/%d/%s", (int)c, files[i]);
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0 || write(fd, map, strlen(map)) < 0) die("launch: writing %s: %s", path, strerror(errno));
    close(fd);
  }
  snprintf(path, sizeof path, "/proc/%d/ns/user", (int)c);
  int ns = open(path, O_RDONLY | O_CLOEXEC);
  if (ns < 0) die("launch: open %s: %s", path, strerror(errno));
  close(sync[1]); /* the holder's read ends: it exits */
  close(sync[0]);
  return ns;
}

void idmap_reap(void) {
  for (int i = 0; i < nholders; i++)
    while (waitpid(holders[i], NULL, 0) < 0 && errno == EINTR) {
    }
}
