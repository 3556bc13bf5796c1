/**
 * The probe with the preflight folded in: one mechanism per tier tried, the tier that applies, what it
 * does not enforce and what would close each gap. What `aleph-sandbox doctor` prints.
 */
import type { ProbeMechanism } from '@aleph/sandbox-core';
import { gvisorDetail } from '../host/gvisor-facts.js';
import { readHostTraits } from '../host/host-traits.js';
import type { LinuxProbe } from '../host/probe.js';
import { linuxGapFixes } from './gap-fixes.js';
import type { TierSelection } from './select-tier.js';
import { apparmorUserns } from './tier-fixes.js';
import { LINUX_TIERS, type LinuxTierId, linuxTier } from './tiers.js';

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
  const mechanisms = tierMechanisms(base, selection);
  if (selection.tier === undefined) return noTier(base, selection, mechanisms, isRoot);
  return chosenTier(base, { ...selection, tier: selection.tier }, mechanisms, notEnforced, isRoot);
}

/** The probe's mechanisms, plus one per tier (tried, or weaker than allowed), AppArmor and the identity. */
function tierMechanisms(base: LinuxProbe, selection: TierSelection): Record<string, ProbeMechanism> {
  const mechanisms: Record<string, ProbeMechanism> = { ...base.mechanisms };
  for (const a of selection.attempts) {
    const t = linuxTier(a.tier);
    mechanisms[`tier-${t.number}`] = a.ok
      ? {
          available: true,
          detail: `${t.label}: ${a.hostProc === true ? a.detail : 'ran a sandboxed `true`'}`,
        }
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
  const gvisor = readHostTraits().gvisor;
  if (gvisor) mechanisms.gvisor = { available: false, detail: gvisorDetail(gvisor) };
  // Newer gVisor: bwrap's own user namespace is refused, but tier 2 ran in the ones its launcher made.
  const tier2 = selection.attempts.find((a) => a.tier === 'user-namespace');
  if (gvisor === 'from-2023-11' && tier2?.ok === true && mechanisms['user-namespaces']?.available === false)
    mechanisms['user-namespaces'] = {
      available: true,
      detail: `tier 2 ran a sandboxed \`true\` in user and network namespaces its launcher made (under gVisor bwrap cannot make its own: ${mechanisms['user-namespaces'].detail})`,
    };
  if (selection.tier === 'user-namespace' && base.mechanisms.identity?.detail.startsWith('host is root'))
    mechanisms.identity = {
      available: true,
      detail:
        gvisor === 'from-2023-11'
          ? 'host is root without what tier 1 needs: commands run as uid 0 with no capabilities, in a user namespace of their own (its launcher’s, under gVisor) where only that uid is mapped, as 0'
          : 'host is root without what tier 1 needs: commands run as uid 0 with no capabilities, shown as uid 65533 in a user namespace',
    };
  if (selection.tier === 'direct')
    mechanisms.identity = {
      available: true,
      detail:
        "commands keep the host's uid with every capability dropped (bounding set included) and no_new_privs",
    };
  return mechanisms;
}

/** No tier ran a sandboxed `true`: unavailable, with every attempt and its fix as the problem. */
function noTier(
  base: LinuxProbe,
  selection: TierSelection,
  mechanisms: Record<string, ProbeMechanism>,
  isRoot: boolean,
): LinuxProbe {
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

/** A tier ran: available, labelled with it, with its gaps (then the limits') and their fixes. */
function chosenTier(
  base: LinuxProbe,
  selection: TierSelection & { readonly tier: LinuxTierId },
  mechanisms: Record<string, ProbeMechanism>,
  notEnforced: readonly string[],
  isRoot: boolean,
): LinuxProbe {
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
