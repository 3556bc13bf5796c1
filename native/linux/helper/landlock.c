/*
 * Landlock inside the sandbox (landlock.h): the kernel's interface (defined here, so older headers still
 * build this), the ruleset the helper enforces from its options, and the probe's exercise of it.
 */
#define _GNU_SOURCE
#include "landlock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../common/compat.h"
#include "../common/errors.h"

/* Landlock UAPI. */
#define LL_CREATE_RULESET_VERSION (1U << 0)
#define LL_RULE_PATH_BENEATH 1
#define LL_RULE_NET_PORT 2
#define LL_FS_EXECUTE (1ULL << 0)
#define LL_FS_WRITE_FILE (1ULL << 1)
#define LL_FS_READ_FILE (1ULL << 2)
#define LL_FS_READ_DIR (1ULL << 3)
#define LL_FS_REMOVE_DIR (1ULL << 4)
#define LL_FS_REMOVE_FILE (1ULL << 5)
#define LL_FS_MAKE_CHAR (1ULL << 6)
#define LL_FS_MAKE_DIR (1ULL << 7)
#define LL_FS_MAKE_REG (1ULL << 8)
#define LL_FS_MAKE_SOCK (1ULL << 9)
#define LL_FS_MAKE_FIFO (1ULL << 10)
#define LL_FS_MAKE_BLOCK (1ULL << 11)
#define LL_FS_MAKE_SYM (1ULL << 12)
#define LL_FS_REFER (1ULL << 13)    /* ABI 2 */
#define LL_FS_TRUNCATE (1ULL << 14) /* ABI 3 */
#define LL_FS_IOCTL_DEV (1ULL << 15) /* ABI 5 */
#define LL_NET_BIND_TCP (1ULL << 0)  /* ABI 4 */
#define LL_NET_CONNECT_TCP (1ULL << 1)
#define LL_SCOPE_ABSTRACT_UNIX (1ULL << 0) /* ABI 6 */
#define LL_SCOPE_SIGNAL (1ULL << 1)

struct ll_ruleset_attr {
  uint64_t handled_access_fs;
  uint64_t handled_access_net;
  uint64_t scoped;
};
struct ll_path_beneath_attr {
  uint64_t allowed_access;
  int32_t parent_fd;
} __attribute__((packed));
struct ll_net_port_attr {
  uint64_t allowed_access;
  uint64_t port;
};

int landlock_abi(void) {
  long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LL_CREATE_RULESET_VERSION);
  return abi < 0 ? 0 : (int)abi;
}

const char *landlock_exercise(char *buf, size_t len) {
  if (syscall(SYS_landlock_create_ruleset, NULL, 0, LL_CREATE_RULESET_VERSION) < 0) {
    snprintf(buf, len, "the ABI query failed: %s%s", strerror(errno),
             errno == EOPNOTSUPP ? " (Landlock is built in but not enabled: lsm= on the kernel command line)" : "");
    return buf;
  }
  /* A ruleset that handles directory reads and allows none: listing / must then be refused. */
  struct ll_ruleset_attr attr = {.handled_access_fs = LL_FS_READ_DIR};
  int ruleset = (int)syscall(SYS_landlock_create_ruleset, &attr, sizeof(uint64_t), 0);
  if (ruleset < 0) return snprintf(buf, len, "landlock_create_ruleset: %s", strerror(errno)), buf;
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) return snprintf(buf, len, "no_new_privs: %s", strerror(errno)), buf;
  if (syscall(SYS_landlock_restrict_self, ruleset, 0) < 0)
    return snprintf(buf, len, "landlock_restrict_self: %s", strerror(errno)), buf;
  int fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) return snprintf(buf, len, "a ruleset allowing no directory reads was enforced, yet / could be listed"), buf;
  if (errno != EACCES) return snprintf(buf, len, "listing / under the ruleset: %s, not EACCES", strerror(errno)), buf;
  return "ok";
}

static uint64_t fs_handled(int abi) {
  uint64_t all = LL_FS_EXECUTE | LL_FS_WRITE_FILE | LL_FS_READ_FILE | LL_FS_READ_DIR | LL_FS_REMOVE_DIR |
                 LL_FS_REMOVE_FILE | LL_FS_MAKE_CHAR | LL_FS_MAKE_DIR | LL_FS_MAKE_REG | LL_FS_MAKE_SOCK |
                 LL_FS_MAKE_FIFO | LL_FS_MAKE_BLOCK | LL_FS_MAKE_SYM;
  if (abi >= 2) all |= LL_FS_REFER;
  if (abi >= 3) all |= LL_FS_TRUNCATE;
  if (abi >= 5) all |= LL_FS_IOCTL_DEV;
  return all;
}

/* The descriptor a rule is made on. A user path's rule names the descriptor the launcher opened and checked
 * (its number, substituted for @NAME:v): the rule is added on it, so a path swapped since cannot widen it.
 * A system path is opened here (-1 when it is not there). */
static int rule_fd(const char *value) {
  if (value[0] >= '0' && value[0] <= '9') {
    int fd = (int)parse_long(value, "Landlock rule descriptor");
    struct stat st;
    if (fstat(fd, &st) < 0) die("Landlock rule descriptor %s: %s", value, strerror(errno));
    return fd;
  }
  int fd = open(value, O_PATH | O_CLOEXEC);
  if (fd < 0 && errno != ENOENT) die("open %s for Landlock: %s", value, strerror(errno));
  return fd;
}

int apply_landlock(const struct landlock_rules *r) {
  if (strcmp(r->mode, "off") == 0) return 0;
  int required = strcmp(r->mode, "required") == 0;
  int abi = landlock_abi();
  if (abi <= 0) {
    if (required) die("Landlock is required but this kernel does not support it");
    return 0;
  }
  uint64_t handled = fs_handled(abi);
  struct ll_ruleset_attr attr = {.handled_access_fs = handled};
  size_t size = sizeof(uint64_t);
  if (abi >= 4 && r->net_handled) {
    attr.handled_access_net = LL_NET_BIND_TCP | LL_NET_CONNECT_TCP;
    size = 2 * sizeof(uint64_t);
  }
  if (abi >= 6 && r->scope) {
    attr.scoped = LL_SCOPE_ABSTRACT_UNIX | LL_SCOPE_SIGNAL;
    size = 3 * sizeof(uint64_t);
  }
  int ruleset = (int)syscall(SYS_landlock_create_ruleset, &attr, size, 0);
  if (ruleset < 0) die("landlock_create_ruleset: %s", strerror(errno));
  uint64_t read_exec = LL_FS_EXECUTE | LL_FS_READ_FILE | LL_FS_READ_DIR;
  uint64_t file_rights = LL_FS_EXECUTE | LL_FS_WRITE_FILE | LL_FS_READ_FILE | (abi >= 3 ? LL_FS_TRUNCATE : 0) |
                         (abi >= 5 ? LL_FS_IOCTL_DEV : 0);
  for (int i = 0; i < r->npaths; i++) {
    int fd = rule_fd(r->paths[i].path);
    if (fd < 0) continue; /* not mounted here (e.g. /lib32) */
    uint64_t access;
    switch (r->paths[i].kind) {
    case 'r': access = read_exec; break;
    case 'l': access = LL_FS_READ_DIR; break;
    case 'd': access = read_exec | LL_FS_WRITE_FILE | (abi >= 3 ? LL_FS_TRUNCATE : 0) | (abi >= 5 ? LL_FS_IOCTL_DEV : 0); break;
    default: access = handled; break;
    }
    struct stat st;
    if (fstat(fd, &st) == 0 && !S_ISDIR(st.st_mode)) access &= file_rights;
    struct ll_path_beneath_attr rule = {.allowed_access = access & handled, .parent_fd = fd};
    if (syscall(SYS_landlock_add_rule, ruleset, LL_RULE_PATH_BENEATH, &rule, 0) < 0)
      die("landlock_add_rule %s: %s", r->paths[i].path, strerror(errno));
    close(fd);
  }
  if (abi >= 4 && r->net_handled) {
    for (int i = 0; i < r->nconnect; i++) {
      struct ll_net_port_attr rule = {.allowed_access = LL_NET_CONNECT_TCP, .port = (uint64_t)r->connect_ports[i]};
      if (syscall(SYS_landlock_add_rule, ruleset, LL_RULE_NET_PORT, &rule, 0) < 0)
        die("landlock_add_rule port %ld: %s", r->connect_ports[i], strerror(errno));
    }
  }
  if (syscall(SYS_landlock_restrict_self, ruleset, 0) < 0) die("landlock_restrict_self: %s", strerror(errno));
  close(ruleset);
  return abi;
}
