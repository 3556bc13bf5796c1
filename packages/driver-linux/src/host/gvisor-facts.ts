/**
 * What gVisor (runsc) lets each tier do, as measured under podman in two releases: 20221219 (Debian 12's)
 * and 20240729 (Debian 12's bookworm-backports), which stand for the generations before and from 2023-11
 * (`GvisorGeneration`): the reason and the fix each mechanism and tier prints there, so doctor says gVisor
 * and why instead of a kernel's fix (a boot option, a sysctl) that does not apply to it.
 * - Before 2023-11 no tier confines the filesystem: Landlock is ENOSYS, bubblewrap cannot start, and mounts
 *   inside a user namespace are refused. The run is refused (exit 125), never run unconfined.
 * - From 2023-11 mounts inside a user namespace work, but bubblewrap cannot make its own user namespace
 *   (nested in the container's) nor set up its network namespace's loopback; tier 2 runs with both
 *   namespaces made by its launcher (`ProfileInputs.outerNamespaces`), without Landlock (declared).
 */
import type { GvisorGeneration } from './host-traits.js';

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
    'user namespaces and mounts inside them work (tmpfs, bind, read-only remount, proc, pivot_root), but bubblewrap cannot make its own: in a user namespace of its own it stops at `Failed to make / slave: Operation not permitted` (gVisor refuses that change in a user namespace made inside another), and in a network namespace of its own at `loopback: Failed RTM_NEWADDR` (gVisor’s netlink); so tier 2 makes both in its launcher and runs bubblewrap inside them',
};

/** After the reason: where that leaves the user. */
const RUNC = 'run the agent’s container under runc to get the sandbox’s own confinement';

/** Landlock under gVisor: not implemented, by any flag, in any release. */
export const GVISOR_LANDLOCK_FIX =
  'none inside gVisor (runsc): its kernel does not implement Landlock (ENOSYS for landlock_create_ruleset), and no runsc flag or capability enables it';

/** User namespaces under gVisor: created, but bubblewrap cannot use them. */
export function gvisorUsernsFix(g: GvisorGeneration): string {
  return g === 'before-2023-11'
    ? `none inside gVisor (runsc): user namespaces are created there, but ${BWRAP[g]}, ${MEASURED[g]}; ${NEWER}`
    : `none needed for tier 2 inside gVisor (runsc): ${BWRAP[g]} (${MEASURED[g]})`;
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
    : `none known inside gVisor (runsc): ${BWRAP[g]} (${MEASURED[g]}), and that failed here as shown; ${RUNC}`;
}

/** Tier 3 (Landlock, seccomp, no namespaces) under gVisor. */
export function gvisorTier3Fix(g: GvisorGeneration): string {
  const subreaper =
    g === 'before-2023-11'
      ? ' (and this runsc also refuses PR_SET_CHILD_SUBREAPER, which tier 3 reaps leftover processes with)'
      : '';
  const without =
    g === 'before-2023-11'
      ? 'without Landlock no tier confines the filesystem, so commands are refused rather than run unconfined; gVisor itself is then the only boundary around the agent'
      : 'tier 2 confines the filesystem with namespaces and mounts instead (it runs where it is allowed: see tier-2), and where it cannot, commands are refused rather than run unconfined';
  return `none inside gVisor (runsc): tier 3 confines the filesystem with Landlock, which gVisor does not implement${subreaper}; ${without}: ${RUNC}`;
}

/** The `gvisor` mechanism doctor adds there. */
export function gvisorDetail(g: GvisorGeneration): string {
  if (g === 'before-2023-11')
    return `this kernel is gVisor's (runsc), a release from before 2023-11 (it has no /proc/sys/kernel/overflowuid): no Landlock (ENOSYS), no openat2 (the helper walks paths with O_PATH|O_NOFOLLOW instead), bubblewrap cannot start (no /proc/sys/kernel/overflowuid, and mount propagation changes are refused: EINVAL as root, EPERM in a user namespace), mounts in a user namespace are refused (EPERM), read-only bind remounts and pivot_root are EINVAL, PR_SET_CHILD_SUBREAPER is EINVAL (${MEASURED[g]}); so no tier confines the filesystem and commands are refused; each tier above says why`;
  return `this kernel is gVisor's (runsc), a release from 2023-11 (it has /proc/sys/kernel/overflowuid): no Landlock (ENOSYS; declared where tier 2 runs), no openat2 (the helper walks paths with O_PATH|O_NOFOLLOW instead), no idmapped mounts (open_tree ENOSYS: no tier 1), no close_range up to ~0U (the helper lists /proc/self/fd instead); ${BWRAP[g]} (${MEASURED[g]}); each tier above says whether it ran`;
}
