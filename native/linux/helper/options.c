/*
 * The helper's command line (options.h): --uid, --gid, --rlimit, --landlock and the --ll-* rules, the
 * bridge's (--bridge PORT:PATH, --egress-port, --dns, --dns-allow, --dns-deny, --own-netns, --publish-fd),
 * --seccomp-fd, --env-fd, --status-fd (read first, by helper.c), --changes-fd, --changes-spawn deny (the
 * trapping filter refuses process creation; needs --changes-fd), --chdir, the namespace limits (ns-limits.c:
 * --sysctl-kernel, --sysctl-user, --pid-max, --userns-limit) and the mount operations (mounts.c).
 */
#define _GNU_SOURCE
#include "options.h"

#include <string.h>

#include "../common/errors.h"
#include "mounts.h"
#include "ns-limits.h"

/* --ll-ro, --ll-rw, --ll-dev, --ll-list: a path rule of kind 'r', 'w', 'd' or 'l'; 0 for another option. */
static char path_rule_kind(const char *a) {
  if (strcmp(a, "--ll-ro") == 0) return 'r';
  if (strcmp(a, "--ll-rw") == 0) return 'w';
  if (strcmp(a, "--ll-dev") == 0) return 'd';
  if (strcmp(a, "--ll-list") == 0) return 'l';
  return 0;
}

/* A bridge option A with its value V into P; 0 when A is not one. */
static int bridge_option(struct bridge_plan *p, const char *a, char *v) {
  if (strcmp(a, "--bridge") == 0) {
    char *colon = strchr(v, ':');
    if (colon == NULL) die("bad --bridge %s (want PORT:PATH)", v);
    *colon = '\0';
    p->proxy_port = parse_long(v, "bridge port");
    p->proxy_path = colon + 1;
  } else if (strcmp(a, "--egress-port") == 0) {
    if (p->negress >= BRIDGE_MAX_EGRESS) die("too many --egress-port (at most %d)", BRIDGE_MAX_EGRESS);
    long port = parse_long(v, "egress port");
    if (port < 1 || port > 65535) die("bad --egress-port %s", v);
    p->egress_ports[p->negress++] = port;
  } else if (strcmp(a, "--dns") == 0) {
    p->dns = strcmp(v, "on") == 0;
  } else if (strcmp(a, "--dns-allow") == 0 || strcmp(a, "--dns-deny") == 0) {
    names_add(&p->names, v, strcmp(a, "--dns-deny") == 0);
  } else if (strcmp(a, "--own-netns") == 0) {
    p->own_netns = strcmp(v, "on") == 0;
  } else if (strcmp(a, "--publish-fd") == 0) {
    p->publish_fd = (int)parse_long(v, "fd");
  } else {
    return 0;
  }
  return 1;
}

void parse_args(int argc, char **argv, struct options *o) {
  memset(o, 0, sizeof *o);
  o->uid = o->gid = -1;
  o->landlock.mode = "off";
  o->seccomp_fd = -1;
  o->env_fd = -1;
  o->changes_fd = -1;
  ns_limits_init(&o->ns_limits);
  o->bridge.publish_fd = -1;
  struct landlock_rules *ll = &o->landlock;
  int i = 1;
  for (; i < argc; i++) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "--") == 0) {
      i++;
      break;
    }
    if (v == NULL) die("option %s needs a value", a);
    char kind = path_rule_kind(a);
    if (strcmp(a, "--uid") == 0) o->uid = parse_long(v, "uid");
    else if (strcmp(a, "--gid") == 0) o->gid = parse_long(v, "gid");
    else if (strcmp(a, "--rlimit") == 0) rlimit_add(&o->rlimits, v);
    else if (strcmp(a, "--landlock") == 0) ll->mode = v;
    else if (kind != 0) {
      if (ll->npaths >= LANDLOCK_MAX_PATHS) die("too many Landlock paths");
      ll->paths[ll->npaths].path = v;
      ll->paths[ll->npaths].kind = kind;
      ll->npaths++;
    } else if (strcmp(a, "--ll-net") == 0) ll->net_handled = strcmp(v, "on") == 0;
    else if (strcmp(a, "--ll-connect") == 0) {
      if (ll->nconnect >= 16) die("too many --ll-connect");
      ll->connect_ports[ll->nconnect++] = parse_long(v, "port");
    } else if (strcmp(a, "--ll-scope") == 0) ll->scope = strcmp(v, "on") == 0;
    else if (bridge_option(&o->bridge, a, (char *)v)) {
    } else if (strcmp(a, "--seccomp-fd") == 0) o->seccomp_fd = (int)parse_long(v, "fd");
    else if (strcmp(a, "--env-fd") == 0) o->env_fd = (int)parse_long(v, "fd");
    else if (strcmp(a, "--changes-fd") == 0) o->changes_fd = (int)parse_long(v, "fd");
    else if (strcmp(a, "--changes-spawn") == 0) {
      if (strcmp(v, "deny") != 0) die("--changes-spawn %s: only `deny` is known", v);
      o->changes_deny_spawn = 1;
    }
    else if (strcmp(a, "--chdir") == 0) o->chdir = v;
    else if (strcmp(a, "--status-fd") == 0) { /* read first, by helper.c */
    }
    else if (mount_op_parse(a, argv, argc, &i)) continue;
    else if (!ns_limits_option(&o->ns_limits, a, v)) die("unknown option %s", a);
    i++;
  }
  if (i >= argc) die("no program given after --");
  if (o->changes_deny_spawn && o->changes_fd < 0) die("--changes-spawn deny needs --changes-fd");
  o->argv = &argv[i];
}
