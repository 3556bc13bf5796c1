/*
 * aleph-sandbox-init: one static binary, several programs, chosen by the first argument.
 *
 *   aleph-sandbox-init [--direct] OPTIONS -- PROGRAM…   the helper: inside bwrap's namespaces (or tier 3's
 *                                                      host, --direct), the last step before PROGRAM runs
 *                                                      (helper/helper.c)
 *   aleph-sandbox-init --launch OPTIONS -- bwrap …      the launcher, on the host: opens the user paths,
 *                                                      runs bwrap, checks and cleans up after it
 *                                                      (launcher/launch.c, after-run/)
 *   aleph-sandbox-init --spawner SOCKET                 the driver's fork server, on the host
 *                                                      (spawner/spawner.c)
 *   aleph-sandbox-init --probe                          what this kernel does, found by doing it, as one
 *                                                      JSON line (probe/probe.c)
 *   aleph-sandbox-init --probe-idmap PATH…              on the host: whether each PATH's mount can be
 *                                                      idmapped, as the launcher would (probe/idmap-probe.c)
 *   aleph-sandbox-init --enter-cgroup DIR -- PROGRAM…   on the host: moves itself into the cgroup DIR
 *                                                      (writing to DIR/cgroup.procs) and execs PROGRAM, so
 *                                                      nothing PROGRAM starts escapes it
 *   aleph-sandbox-init --undo DIR [--force] [--dry-run]  on the host: takes back the run whose change store is
 *                                                      DIR, as one JSON line (changes/undo.c)
 *   aleph-sandbox-init --version
 *
 * Setup failures exit 125 with a line starting "aleph-sandbox-init:" on stderr (common/errors.c). A program
 * that cannot be executed exits 127 (not found) or 126, as a shell would. The layout of the sources and
 * which part may use which: README.md beside this file.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "changes/undo.h"
#include "common/errors.h"
#include "helper/helper.h"
#include "launcher/launch.h"
#include "probe/idmap-probe.h"
#include "probe/probe.h"
#include "spawner/spawner.h"

#ifndef ALEPH_HELPER_VERSION
#define ALEPH_HELPER_VERSION "0.1.0"
#endif

static int enter_cgroup(int argc, char **argv) {
  if (argc < 5 || strcmp(argv[3], "--") != 0) die("usage: --enter-cgroup DIR -- PROGRAM [ARGS]");
  char path[4096];
  if (snprintf(path, sizeof path, "%s/cgroup.procs", argv[2]) >= (int)sizeof path) die("cgroup path too long");
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) die("open %s: %s", path, strerror(errno));
  if (write(fd, "0\n", 2) != 2) die("joining %s: %s", argv[2], strerror(errno));
  close(fd);
  execvp(argv[4], &argv[4]);
  die("cannot execute %s: %s", argv[4], strerror(errno));
  return 125;
}

int main(int argc, char **argv) {
  if (argc >= 2 && strcmp(argv[1], "--launch") == 0) return launch_main(argc, argv);
  if (argc >= 2 && strcmp(argv[1], "--spawner") == 0) return spawner_main(argc, argv);
  if (argc == 2 && strcmp(argv[1], "--version") == 0) {
    printf("aleph-sandbox-init %s\n", ALEPH_HELPER_VERSION);
    return 0;
  }
  if (argc == 2 && strcmp(argv[1], "--probe") == 0) return probe_main();
  if (argc >= 2 && strcmp(argv[1], "--probe-idmap") == 0) return probe_idmap_main(argc, argv);
  if (argc >= 2 && strcmp(argv[1], "--enter-cgroup") == 0) return enter_cgroup(argc, argv);
  if (argc >= 2 && strcmp(argv[1], "--undo") == 0) return undo_main(argc, argv);
  return helper_main(argc, argv);
}
