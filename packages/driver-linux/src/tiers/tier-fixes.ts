/**
 * What makes a tier work where its preflight failed (`fixFor`), and the AppArmor restriction of
 * unprivileged user namespaces, which tier 2 of a non-root host depends on (`apparmorUserns`).
 */
import type { ProbeMechanism } from '@aleph/sandbox-core';
import { type HostTraits, readHostTraits } from '../host/host-traits.js';
import { readSysctl } from '../host/sysctl.js';
import { tier1Fix, tier2Fix, tier3Fix } from './container-fixes.js';
import type { LinuxTierId } from './tiers.js';

const APPARMOR_FIX =
  '`sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0`, or an AppArmor profile for bwrap with `userns,` (see /etc/apparmor.d/bwrap-userns-restrict)';

/**
 * The AppArmor restriction of unprivileged user namespaces (Ubuntu 24.04 and later): the kernel's setting
 * and what `exercised` — the helper's attempt (`--probe`: a user namespace, this uid mapped, a mount
 * namespace inside) — did for this process. Without `exercised` (the helper could not run) the setting
 * alone is reported, and says so. `v` is the setting (read from /proc/sys by default).
 */
export function apparmorUserns(
  exercised?: string,
  v: string | undefined = readSysctl('kernel/apparmor_restrict_unprivileged_userns'),
): ProbeMechanism {
  const setting =
    v === undefined
      ? 'no AppArmor user-namespace restriction in this kernel'
      : `kernel.apparmor_restrict_unprivileged_userns = ${v}`;
  const tried =
    exercised === undefined
      ? 'not tried (the helper could not run)'
      : exercised === 'ok'
        ? `a user namespace made by this process (uid ${process.getuid?.()}) got its capabilities: a mount namespace inside it worked`
        : `making a user namespace with a mount namespace inside failed for this process: ${exercised}`;
  if (v === undefined || v === '0')
    return {
      available: true,
      detail: `${setting}; ${tried}${exercised !== undefined && exercised !== 'ok' ? ' (not AppArmor: see user-namespaces and the tiers)' : ''}`,
    };
  if (exercised === 'ok')
    return {
      available: true,
      detail: `${setting}, yet ${tried} (it holds CAP_SYS_ADMIN, or an AppArmor profile allows it)`,
    };
  return {
    available: false,
    detail: `${setting}: unconfined programs get a user namespace without capabilities; ${tried}`,
    fix: APPARMOR_FIX,
  };
}

/** Where the state directory's path holds a symlink, every tier fails the same way. */
const STATE_SYMLINK_FIX =
  "give the state directory a path without symlinks: it is `~/.aleph/run` (the driver's `stateDir` option otherwise), so run with HOME set to its real path (`HOME=$(realpath ~)`) or pass a `stateDir` whose path has no symlink";

/**
 * The exact change that makes `tier` work here, from what failed, what the host shows (`traits`: its
 * capabilities, a masked /proc, gVisor) and the kernel's settings.
 */
export function fixFor(tier: LinuxTierId, failure: string, traits: HostTraits = readHostTraits()): string {
  // What failed, without a fix the message may already carry (a run's own).
  const detail = failure.split('; fix: ')[0] as string;
  // Every tier's launcher opens the state directory first: its path is the fault, not the tier.
  if (/cannot open the state directory .*symlink/.test(detail)) return STATE_SYMLINK_FIX;
  if (/bwrap not found|ENOENT.*bwrap|cannot execute .*bwrap/i.test(detail) && tier !== 'direct')
    return 'install bubblewrap: apt-get install -y bubblewrap (Debian/Ubuntu) or dnf install bubblewrap';
  if (tier === 'namespaces')
    return (
      tier1Fix(detail, traits) ??
      'give the host side CAP_SYS_ADMIN, CAP_SYS_PTRACE and CAP_NET_ADMIN and let it create namespaces and mount (podman/Docker: `--cap-add SYS_ADMIN --cap-add SYS_PTRACE --cap-add NET_ADMIN`)'
    );
  if (tier === 'user-namespace') {
    const inContainer = tier2Fix(detail, traits);
    if (inContainer !== undefined) return inContainer;
    const restricted = readSysctl('kernel/apparmor_restrict_unprivileged_userns');
    if (restricted !== undefined && restricted !== '0') return APPARMOR_FIX;
    if (readSysctl('kernel/unprivileged_userns_clone') === '0')
      return '`sudo sysctl -w kernel.unprivileged_userns_clone=1`';
    if (readSysctl('user/max_user_namespaces') === '0')
      return '`sudo sysctl -w user.max_user_namespaces=15000`';
    return 'allow user namespaces: a seccomp profile that permits unshare/clone with CLONE_NEWUSER (Docker: `--security-opt seccomp=unconfined`)';
  }
  return (
    tier3Fix(detail, traits) ??
    'tier 3 needs the helper, seccomp-BPF, Landlock and openat2: the message above says which failed'
  );
}
