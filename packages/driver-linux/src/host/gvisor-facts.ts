/**
 * What gVisor (runsc) lets each tier do, as measured in runsc release 20221219 (Debian 12's) under podman and
 * `runsc do`: the reason and the fix each mechanism and tier prints there, so doctor says gVisor and why
 * instead of a kernel's fix (a boot option, a sysctl) that does not apply to it. No tier can confine the
 * filesystem there: Landlock is ENOSYS, bubblewrap cannot start, and the mounts a tier would make itself are
 * refused inside a user namespace; the run is then refused (exit 125), never run unconfined.
 */
import os from 'node:os';
import { isGvisorKernel } from './host-traits.js';

/** The runsc release these facts were measured in, and what a later one is reported to add. */
const MEASURED = 'measured in runsc release 20221219';
const LATER =
  'no runsc flag (`--runtime-flag …`) or capability changes this in that release; later gVisor releases are reported to run bubblewrap (they add /proc/sys/kernel/overflowuid from 2023-11, gVisor pull request 9669; bubblewrap 0.12 also needs their openat2, gVisor issue 14451), so a current runsc may give tier 2 (not verified here)';

/** Landlock under gVisor: not implemented, by any flag. */
export const GVISOR_LANDLOCK_FIX =
  'none inside gVisor (runsc): its kernel does not implement Landlock (ENOSYS for landlock_create_ruleset), and no runsc flag or capability enables it';

/** User namespaces under gVisor: created, but bubblewrap cannot use them. */
export const GVISOR_USERNS_FIX = `none inside gVisor (runsc): user namespaces are created there, but bubblewrap cannot start (no /proc/sys/kernel/overflowuid; with the file provided it stops at \`Failed to make / slave\`: mount propagation changes are refused) and mounts inside a user namespace are refused (EPERM), ${MEASURED}; ${LATER}`;

/** Tier 1 (root, bubblewrap without a user namespace, idmapped user paths) under gVisor. */
export const GVISOR_TIER1_FIX = `none inside gVisor (runsc): its kernel implements neither open_tree/mount_setattr (idmapped mounts) nor the /proc/sys/kernel files and mount propagation changes bubblewrap needs (\`Failed to make / slave: Invalid argument\` as root), nor read-only bind remounts (EINVAL), so tier 1 cannot run there even with \`--cap-add SYS_ADMIN\` (${MEASURED}); ${LATER}`;

/** Tier 2 (bubblewrap in a user namespace) under gVisor. */
export const GVISOR_TIER2_FIX = `none inside gVisor (runsc): it has no /proc/sys/kernel/overflowuid, which bubblewrap reads at start, and refuses mounts inside a user namespace (EPERM), so tier 2 cannot run there (${MEASURED}); ${LATER}`;

/** Tier 3 (Landlock, seccomp, no namespaces) under gVisor. */
export const GVISOR_TIER3_FIX =
  'none inside gVisor (runsc): tier 3 confines the filesystem with Landlock, which gVisor does not implement (and this runsc also refuses PR_SET_CHILD_SUBREAPER, which tier 3 reaps leftover processes with); without Landlock no tier confines the filesystem, so commands are refused rather than run unconfined; gVisor itself is then the only boundary around the agent: run them in a runc container to get the sandbox’s own confinement';

/** The `gvisor` mechanism doctor adds there. */
export const GVISOR_DETAIL = `this kernel is gVisor's (runsc): no Landlock (ENOSYS), no openat2 (the helper walks paths with O_PATH|O_NOFOLLOW instead), bubblewrap cannot start (no /proc/sys/kernel/overflowuid, and mount propagation changes are refused: EINVAL as root, EPERM in a user namespace), mounts in a user namespace are refused (EPERM), read-only bind remounts and pivot_root are EINVAL, PR_SET_CHILD_SUBREAPER is EINVAL (${MEASURED}); so no tier confines the filesystem and commands are refused; each tier above says why`;

/** Whether this process runs on gVisor's kernel. */
export function onGvisor(): boolean {
  return isGvisorKernel(os.release(), os.version());
}
