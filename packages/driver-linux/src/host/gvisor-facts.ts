/**
 * What gVisor (runsc) lets each tier do, as measured under podman in two releases: 20221219 (Debian 12's)
 * and 20240729 (Debian 12's bookworm-backports), which stand for the generations before and from 2023-11
 * (`GvisorGeneration`): the reason and the fix each mechanism and tier prints there, so doctor says gVisor
 * and why instead of a kernel's fix (a boot option, a sysctl) that does not apply to it. No tier confines
 * the filesystem in either: Landlock is ENOSYS, and bubblewrap cannot start (in the older one mounts inside
 * a user namespace are refused altogether; in the newer one they work, but not bubblewrap's own nested
 * user namespace nor its loopback set-up). The run is then refused (exit 125), never run unconfined.
 */
import os from 'node:os';
import { type GvisorGeneration, gvisorGeneration, isGvisorKernel } from './host-traits.js';

const MEASURED: Record<GvisorGeneration, string> = {
  'before-2023-11': 'measured in runsc release 20221219',
  'from-2023-11': 'measured in runsc release 20240729',
};

/** Where the newer generation stands, and what would let a tier run there. */
const NEWER =
  'no runsc flag (`--runtime-flag …`) or capability changes this in that release; a runsc from 2023-11 on (20240729 is in Debian 12’s bookworm-backports) has /proc/sys/kernel/overflowuid and allows mounts inside a user namespace, but bubblewrap still cannot start there (its own nested user namespace and its loopback set-up are refused; measured in runsc release 20240729), so it gives no tier either';

/** Why bubblewrap cannot start, per generation. */
const BWRAP: Record<GvisorGeneration, string> = {
  'before-2023-11':
    'bubblewrap cannot start (no /proc/sys/kernel/overflowuid; with the file provided it stops at `Failed to make / slave`: mount propagation changes are refused) and mounts inside a user namespace are refused (EPERM)',
  'from-2023-11':
    'user namespaces and mounts inside them work (tmpfs, bind, read-only remount, proc, pivot_root), but bubblewrap cannot start: in a user namespace of its own it stops at `Failed to make / slave: Operation not permitted` (gVisor refuses that change in a user namespace made inside another), and in a network namespace of its own at `loopback: Failed RTM_NEWADDR` (gVisor’s netlink); bubblewrap does run inside user and network namespaces made before it starts, which this sandbox does not do yet',
};

/** After the reason: where that leaves the user. */
const RUNC = 'run the agent’s container under runc to get the sandbox’s own confinement';

/** Which gVisor this process runs on, or false where it runs on another kernel. */
export function onGvisor(): false | GvisorGeneration {
  return isGvisorKernel(os.release(), os.version()) && gvisorGeneration();
}

/** Landlock under gVisor: not implemented, by any flag, in any release. */
export const GVISOR_LANDLOCK_FIX =
  'none inside gVisor (runsc): its kernel does not implement Landlock (ENOSYS for landlock_create_ruleset), and no runsc flag or capability enables it';

/** User namespaces under gVisor: created, but bubblewrap cannot use them. */
export function gvisorUsernsFix(g: GvisorGeneration): string {
  return g === 'before-2023-11'
    ? `none inside gVisor (runsc): user namespaces are created there, but ${BWRAP[g]}, ${MEASURED[g]}; ${NEWER}`
    : `none inside gVisor (runsc): ${BWRAP[g]} (${MEASURED[g]}; no runsc flag or capability changes this); ${RUNC}`;
}

/** Tier 1 (root, bubblewrap without a user namespace, idmapped user paths) under gVisor. */
export function gvisorTier1Fix(g: GvisorGeneration): string {
  return g === 'before-2023-11'
    ? `none inside gVisor (runsc): its kernel implements neither open_tree/mount_setattr (idmapped mounts) nor the /proc/sys/kernel files and mount propagation changes bubblewrap needs (\`Failed to make / slave: Invalid argument\` as root), nor read-only bind remounts (EINVAL), so tier 1 cannot run there even with \`--cap-add SYS_ADMIN\` (${MEASURED[g]}); ${NEWER}`
    : `none inside gVisor (runsc): its kernel does not implement open_tree/mount_setattr (ENOSYS), which tier 1 makes its idmapped user paths with, so tier 1 cannot run there even with \`--cap-add SYS_ADMIN\` (${MEASURED[g]}); ${RUNC}`;
}

/** Tier 2 (bubblewrap in a user namespace) under gVisor. */
export function gvisorTier2Fix(g: GvisorGeneration): string {
  return g === 'before-2023-11'
    ? `none inside gVisor (runsc): it has no /proc/sys/kernel/overflowuid, which bubblewrap reads at start, and refuses mounts inside a user namespace (EPERM), so tier 2 cannot run there (${MEASURED[g]}); ${NEWER}`
    : `none inside gVisor (runsc): ${BWRAP[g]}, so tier 2 cannot run there (${MEASURED[g]}; no runsc flag or capability changes this); ${RUNC}`;
}

/** Tier 3 (Landlock, seccomp, no namespaces) under gVisor. */
export function gvisorTier3Fix(g: GvisorGeneration): string {
  const subreaper =
    g === 'before-2023-11'
      ? ' (and this runsc also refuses PR_SET_CHILD_SUBREAPER, which tier 3 reaps leftover processes with)'
      : '';
  return `none inside gVisor (runsc): tier 3 confines the filesystem with Landlock, which gVisor does not implement${subreaper}; without Landlock no tier confines the filesystem, so commands are refused rather than run unconfined; gVisor itself is then the only boundary around the agent: ${RUNC}`;
}

/** The `gvisor` mechanism doctor adds there. */
export function gvisorDetail(g: GvisorGeneration): string {
  const what =
    g === 'before-2023-11'
      ? 'bubblewrap cannot start (no /proc/sys/kernel/overflowuid, and mount propagation changes are refused: EINVAL as root, EPERM in a user namespace), mounts in a user namespace are refused (EPERM), read-only bind remounts and pivot_root are EINVAL, PR_SET_CHILD_SUBREAPER is EINVAL'
      : `no idmapped mounts (open_tree ENOSYS); ${BWRAP[g]}`;
  return `this kernel is gVisor's (runsc), a release ${g === 'before-2023-11' ? 'from before' : 'from'} 2023-11 (it ${g === 'before-2023-11' ? 'has no' : 'has'} /proc/sys/kernel/overflowuid): no Landlock (ENOSYS), no openat2 (the helper walks paths with O_PATH|O_NOFOLLOW instead), ${what} (${MEASURED[g]}); so no tier confines the filesystem and commands are refused; each tier above says why`;
}
