/**
 * The fix for a failed tier inside a container runtime, from what failed and what the host shows
 * (`host-traits.ts`): the one change of the container's flags that lets that tier run here, checked against
 * what is already granted — the capabilities tier 1 needs (SYS_ADMIN, SYS_PTRACE, NET_ADMIN), a masked
 * /proc (which refuses a fresh procfs), podman's seccomp rule for sethostname — and gVisor, where some
 * tiers cannot run at all.
 */

import { gvisorTier1Fix, gvisorTier2Fix, gvisorTier3Fix } from '../host/gvisor-facts.js';
import { type HostTraits, missingCaps } from '../host/host-traits.js';

const OFF_OVERLAY =
  'keep the workspace, /tmp and home_root on a volume or a tmpfs, not on the container’s overlay root (overlayfs refuses idmapped mounts)';
const UNMASK =
  '`--security-opt systempaths=unconfined` (podman also `--security-opt unmask=ALL`; Docker the same systempaths option)';

/** Tier 1 on a root host: the capabilities it lacks, else what refused the mount API. */
export function tier1Fix(detail: string, traits: HostTraits): string | undefined {
  if (traits.gvisor) return gvisorTier1Fix(traits.gvisor);
  if (/cannot make an idmapped mount/.test(detail))
    return `put the workspace, /tmp and home_root on a filesystem that supports idmapped mounts (ext4, xfs, btrfs, tmpfs on Linux >= 6.3): ${OFF_OVERLAY}`;
  const missing = missingCaps(traits, ['SYS_ADMIN', 'SYS_PTRACE', 'NET_ADMIN']);
  if (missing.length > 0)
    return `add ${missing.map((c) => `CAP_${c}`).join(', ')} to the container (podman/Docker: ${missing.map((c) => `\`--cap-add ${c}\``).join(' ')}): tier 1 clones and idmaps the user paths (CAP_SYS_ADMIN), opens its helper's namespaces through /proc (CAP_SYS_PTRACE) and brings up the loopback of each network namespace as real root (CAP_NET_ADMIN); the runtime's default seccomp profile can stay; ${OFF_OVERLAY}`;
  if (/mount proc/.test(detail) && traits.maskedProc.length > 0)
    return `unmask /proc: ${UNMASK} (the runtime mounts over ${traits.maskedProc.slice(0, 3).join(', ')}…, and the kernel then refuses a fresh procfs)`;
  if (/Operation not permitted|Permission denied/.test(detail))
    return 'the capabilities are there, so a seccomp profile or an LSM refuses the mount API: allow unshare, mount, open_tree, move_mount and mount_setattr (`--security-opt seccomp=unconfined`, or a profile permitting them)';
  return undefined;
}

/** Tier 2: what bubblewrap in a user namespace was refused, as the container's flags. */
export function tier2Fix(detail: string, traits: HostTraits): string | undefined {
  if (traits.gvisor) return gvisorTier2Fix(traits.gvisor);
  if (/overflowuid/.test(detail)) return gvisorTier2Fix('before-2023-11');
  if (/Can't set hostname/.test(detail))
    return `let it set the sandbox's hostname: podman's default seccomp profile allows sethostname only to a container with CAP_SYS_ADMIN: \`--cap-add SYS_ADMIN\`${traits.maskedProc.length > 0 ? `, and unmask /proc, which bubblewrap mounts next: ${UNMASK}` : ''}`;
  if (/Can't mount proc/.test(detail))
    return traits.maskedProc.length > 0
      ? `unmask /proc: ${UNMASK}; the runtime mounts over ${traits.maskedProc.slice(0, 3).join(', ')}…, and the kernel refuses a fresh procfs in a user namespace while parts of /proc are hidden (CAP_SYS_ADMIN and seccomp=unconfined do not change that)`
      : 'a fresh procfs is refused in the new user and PID namespaces: let the container mount proc (`--security-opt systempaths=unconfined`, or a seccomp profile allowing mount)';
  return undefined;
}

/** Tier 3: what the helper alone needs (Landlock), or that gVisor lacks it. */
export function tier3Fix(detail: string, traits: HostTraits): string | undefined {
  if (traits.gvisor) return gvisorTier3Fix(traits.gvisor);
  if (/Landlock/i.test(detail))
    return 'boot a kernel >= 5.13 with Landlock enabled (`lsm=landlock,…` on the kernel command line; in a container, on its host)';
  return undefined;
}
