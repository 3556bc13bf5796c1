import { readFileSync } from 'node:fs';
import type { ProbeMechanism } from '@aleph/sandbox-core';
import type { LinuxProbe } from '../host/probe.js';
import { linuxGapFixes } from './gap-fixes.js';
import { LINUX_TIERS, type LinuxTierId, type LinuxTierNumber, linuxTier } from './tiers.js';

/** One candidate tier tried by running `true` through it. */
export interface TierAttempt {
  readonly tier: LinuxTierId;
  readonly ok: boolean;
  /** What happened: "ran `true`" or the failure (bwrap's or the helper's message). */
  readonly detail: string;
  /** The exact change that makes this tier work, when it failed. */
  readonly fix?: string;
}

/** The preflight's verdict: the strongest candidate that ran `true`, or none. */
export interface TierSelection {
  readonly tier: LinuxTierId | undefined;
  readonly minimumTier: LinuxTierNumber;
  readonly attempts: readonly TierAttempt[];
}

const selections = new Map<string, Promise<TierSelection>>();

/**
 * Runs `attempt` on each candidate, strongest first, and stops at the first that works. The result is
 * cached per process under `key` (the helper, bwrap and the settings that change the outcome), so every
 * driver of this process pays for it once.
 */
export function selectTier(
  key: string,
  candidates: readonly LinuxTierId[],
  minimumTier: LinuxTierNumber,
  attempt: (tier: LinuxTierId) => Promise<{ ok: boolean; detail: string }>,
): Promise<TierSelection> {
  let selection = selections.get(key);
  if (selection === undefined) {
    selection = (async () => {
      const attempts: TierAttempt[] = [];
      for (const tier of candidates) {
        const r = await attempt(tier).catch((e: Error) => ({ ok: false, detail: e.message }));
        const fix = r.ok ? undefined : fixFor(tier, r.detail);
        attempts.push({ tier, ok: r.ok, detail: r.detail, ...(fix === undefined ? {} : { fix }) });
        if (r.ok) return { tier, minimumTier, attempts };
      }
      return { tier: undefined, minimumTier, attempts };
    })();
    selections.set(key, selection);
  }
  return selection;
}

function sysctl(name: string): string | undefined {
  try {
    return readFileSync(`/proc/sys/${name}`, 'utf8').trim();
  } catch {
    return undefined;
  }
}

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
  v: string | undefined = sysctl('kernel/apparmor_restrict_unprivileged_userns'),
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

/** The exact change that makes `tier` work here, from what failed and the kernel's settings. */
export function fixFor(tier: LinuxTierId, detail: string): string {
  if (/bwrap not found|ENOENT.*bwrap|cannot execute .*bwrap/i.test(detail) && tier !== 'direct')
    return 'install bubblewrap: apt-get install -y bubblewrap (Debian/Ubuntu) or dnf install bubblewrap';
  if (tier === 'namespaces')
    return 'give the host side CAP_SYS_ADMIN and let it create namespaces and mount (Docker: `--cap-add SYS_ADMIN --security-opt seccomp=unconfined`, or a seccomp profile allowing unshare, clone with namespace flags, mount, open_tree and mount_setattr)';
  if (tier === 'user-namespace') {
    const restricted = sysctl('kernel/apparmor_restrict_unprivileged_userns');
    if (restricted !== undefined && restricted !== '0') return APPARMOR_FIX;
    if (sysctl('kernel/unprivileged_userns_clone') === '0')
      return '`sudo sysctl -w kernel.unprivileged_userns_clone=1`';
    if (sysctl('user/max_user_namespaces') === '0') return '`sudo sysctl -w user.max_user_namespaces=15000`';
    return 'allow user namespaces: a seccomp profile that permits unshare/clone with CLONE_NEWUSER (Docker: `--security-opt seccomp=unconfined`)';
  }
  if (/Landlock/i.test(detail))
    return 'boot a kernel >= 5.13 with Landlock enabled (`lsm=landlock,…` on the kernel command line)';
  return 'see the message above; tier 3 needs the helper, seccomp-BPF and Landlock';
}

/**
 * Folds the preflight into the probe: one mechanism per tier tried (what ran, or the failure and the
 * fix), the AppArmor restriction, the tier that will apply, what it does not enforce and what would close
 * each gap (`gapFixes`). `available` — and so doctor's "ready" — holds only when a sandboxed `true` ran.
 */
export function withTiers(
  base: LinuxProbe,
  selection: TierSelection,
  notEnforced: readonly string[],
  isRoot = false,
): LinuxProbe {
  const mechanisms: Record<string, ProbeMechanism> = { ...base.mechanisms };
  for (const a of selection.attempts) {
    const t = linuxTier(a.tier);
    mechanisms[`tier-${t.number}`] = a.ok
      ? { available: true, detail: `${t.label}: ran a sandboxed \`true\`` }
      : {
          available: false,
          detail: `${t.label}: ${a.detail}`,
          ...(a.fix === undefined ? {} : { fix: a.fix }),
        };
  }
  for (const t of LINUX_TIERS) {
    if (t.number > selection.minimumTier && mechanisms[`tier-${t.number}`] === undefined)
      mechanisms[`tier-${t.number}`] = {
        available: false,
        detail: `${t.label}: not tried, weaker than minimum_tier = ${selection.minimumTier}`,
      };
  }
  mechanisms['apparmor-userns'] = apparmorUserns(base.userns);
  if (selection.tier === 'user-namespace' && base.mechanisms.identity?.detail.startsWith('host is root'))
    mechanisms.identity = {
      available: true,
      detail:
        'host is root without what tier 1 needs: commands run as uid 0 with no capabilities, shown as uid 65533 in a user namespace',
    };
  if (selection.tier === 'direct')
    mechanisms.identity = {
      available: true,
      detail:
        "commands keep the host's uid with every capability dropped (bounding set included) and no_new_privs",
    };
  if (selection.tier === undefined) {
    const tried = selection.attempts.map(
      (a) => `tier ${linuxTier(a.tier).number}: ${a.detail}${a.fix ? ` — fix: ${a.fix}` : ''}`,
    );
    return {
      ...base,
      available: false,
      tier: 'unavailable',
      mechanisms,
      problems: [
        ...base.problems,
        `no tier of at least minimum_tier = ${selection.minimumTier} could run a sandboxed \`true\`: ${tried.join('; ')}`,
      ],
      tierId: null,
      notEnforced: [...base.notEnforced],
      gapFixes: linuxGapFixes(base.notEnforced, {
        tier: 'direct',
        attempts: selection.attempts,
        cgroup: base.cgroup,
        isRoot,
      }),
    };
  }
  const t = linuxTier(selection.tier);
  const gaps = [...notEnforced, ...base.notEnforced];
  const rest = [
    base.landlockAbi > 0 ? `Landlock ABI ${base.landlockAbi}` : 'no Landlock',
    'seccomp-BPF',
    base.cgroup.available ? 'cgroup v2 limits' : 'rlimit limits (no delegated cgroup v2)',
  ].join(' + ');
  return {
    ...base,
    available: true,
    tier: `${t.label} — ${rest}`,
    mechanisms,
    // What only a stronger tier needed is a gap of this one (its mechanism says so), not a problem.
    problems: [],
    tierId: selection.tier,
    // What the tier leaves open, then what the limits leave unbounded; and what closes each.
    notEnforced: gaps,
    gapFixes: linuxGapFixes(gaps, {
      tier: selection.tier,
      attempts: selection.attempts,
      cgroup: base.cgroup,
      isRoot,
    }),
  };
}
