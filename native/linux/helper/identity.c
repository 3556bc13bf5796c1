/* The program's identity in the sandbox (identity.h): bounding set, groups, gid and uid, capabilities. */
#define _GNU_SOURCE
#include "identity.h"

#include <errno.h>
#include <grp.h>
#include <linux/capability.h>
#include <linux/securebits.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../common/compat.h"
#include "../common/errors.h"

/* Empties the permitted, effective, inheritable and ambient sets. */
static void capabilities_empty(void) {
  prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
  struct __user_cap_header_struct head = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
  struct __user_cap_data_struct none[2];
  memset(none, 0, sizeof none);
  if (syscall(SYS_capset, &head, none) < 0) die("capset: %s", strerror(errno));
}

/* Empties the bounding set (needs CAP_SETPCAP, kept by bwrap for this; without it nothing is dropped, and
 * no_new_privs with a uid other than 0 still gains nothing at an execve), up to the kernel's last
 * capability (EINVAL). */
static void bounding_empty(void) {
  for (int cap = 0; cap <= 63; cap++) {
    if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) == 0) continue;
    if (errno == EINVAL) break;
    if (errno != EPERM) die("PR_CAPBSET_DROP: %s", strerror(errno));
  }
}

/* uid 0 stays ordinary at every later execve: no capabilities from being root, for good (CAP_SETPCAP). */
static void lock_noroot(void) {
  if (prctl(PR_SET_SECUREBITS, SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP |
                                   SECBIT_NO_SETUID_FIXUP_LOCKED | SECBIT_KEEP_CAPS_LOCKED |
                                   SECBIT_NO_CAP_AMBIENT_RAISE | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED,
            0, 0, 0) < 0)
    die("securebits: %s", strerror(errno));
}

void drop_identity(long uid, long gid) {
  if (uid < 0) {
    /* A user namespace's uid (tier 2): only what bwrap kept for the bridge's network goes. As the uid 0
     * of the launcher's user namespace (--outer-ns, where bwrap keeps CAP_SETPCAP for this), an execve
     * must not make it root again either. */
    if (getuid() == 0) lock_noroot();
    bounding_empty();
    capabilities_empty();
    return;
  }
  /* bwrap as root leaves the bounding set full, so every capability is dropped. */
  bounding_empty();
  prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
  if (setgroups(0, NULL) < 0) die("setgroups: %s", strerror(errno));
  if (setresgid((gid_t)gid, (gid_t)gid, (gid_t)gid) < 0) die("setresgid(%ld): %s", gid, strerror(errno));
  if (setresuid((uid_t)uid, (uid_t)uid, (uid_t)uid) < 0) die("setresuid(%ld): %s", uid, strerror(errno));
  /* A uid change from 0 clears the permitted and effective sets, not the inheritable one bwrap filled
   * with what it kept: empty it too, and make sure nothing came back. */
  capabilities_empty();
  if (setresuid(0, 0, 0) == 0) die("could still regain uid 0 after dropping identity");
}

static int capset_empty(void) {
  struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
  struct __user_cap_data_struct d[2];
  memset(d, 0, sizeof d);
  return (int)syscall(SYS_capset, &h, d);
}

void drop_capabilities(void) {
  /* Needs CAP_SETPCAP (tier 2 keeps it for this); where the host lacks it (tier 3), no_new_privs and the
   * empty permitted set still hold. */
  prctl(PR_SET_SECUREBITS, SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP |
                               SECBIT_NO_SETUID_FIXUP_LOCKED | SECBIT_KEEP_CAPS_LOCKED |
                               SECBIT_NO_CAP_AMBIENT_RAISE | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED,
        0, 0, 0);
  for (int cap = 0; cap <= 63; cap++) {
    if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno != EINVAL && errno != EPERM)
      die("PR_CAPBSET_DROP: %s", strerror(errno));
  }
  prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
  if (getuid() == 0) setgroups(0, NULL); /* root's supplementary groups, while CAP_SETGID is still here */
  if (capset_empty() < 0) die("capset: %s", strerror(errno));
  struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
  struct __user_cap_data_struct d[2];
  if (syscall(SYS_capget, &h, d) < 0) die("capget: %s", strerror(errno));
  for (int k = 0; k < 2; k++)
    if (d[k].effective != 0 || d[k].permitted != 0 || d[k].inheritable != 0) die("capabilities are still held after dropping them");
}
