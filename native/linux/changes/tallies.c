/* What the supervisor refused during a run, counted (tallies.h). */
#define _GNU_SOURCE
#include "tallies.h"

#include <stdlib.h>
#include <string.h>

#include "state.h"

#define MAX_NAMES 16 /* distinct programs, and paths, reported */

static struct { char name[32]; long long count; } spawns[MAX_NAMES];
static int nspawns;
static struct { char *path; long long count; } writes[MAX_NAMES];
static int nwrites;
static long long writes_dropped; /* refused writes to paths beyond the first MAX_NAMES */

void store_spawn_refused(const char *comm) {
  for (int k = 0; k < nspawns; k++)
    if (strcmp(spawns[k].name, comm) == 0) {
      spawns[k].count++;
      return;
    }
  if (nspawns >= MAX_NAMES) return;
  snprintf(spawns[nspawns].name, sizeof spawns[0].name, "%s", comm);
  spawns[nspawns++].count = 1;
}

void store_write_refused(const char *path) {
  for (int k = 0; k < nwrites; k++)
    if (strcmp(writes[k].path, path) == 0) {
      writes[k].count++;
      return;
    }
  if (nwrites >= MAX_NAMES) {
    writes_dropped++;
    return;
  }
  char *copy = strdup(path);
  if (copy == NULL) return;
  writes[nwrites].path = copy;
  writes[nwrites++].count = 1;
}

void tallies_write(FILE *f) {
  for (int k = 0; k < nspawns; k++) {
    fprintf(f, "spawn %lld ", spawns[k].count);
    name_write(f, spawns[k].name);
    fputc('\n', f);
  }
  if (writes_dropped > 0) fprintf(f, "rofs-more %lld\n", writes_dropped);
  for (int k = 0; k < nwrites; k++) {
    fprintf(f, "rofs %lld ", writes[k].count);
    name_write(f, writes[k].path);
    fputc('\n', f);
  }
}
