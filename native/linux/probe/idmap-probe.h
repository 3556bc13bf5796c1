/*
 * `aleph-sandbox-init --probe-idmap PATH…`: whether the launcher could make an idmapped mount of each PATH
 * (a user path of a root host's tier 1), found by doing it, as one JSON array of answers on stdout.
 */
#ifndef ALEPH_PROBE_IDMAP_PROBE_H
#define ALEPH_PROBE_IDMAP_PROBE_H

int probe_idmap_main(int argc, char **argv);

#endif
