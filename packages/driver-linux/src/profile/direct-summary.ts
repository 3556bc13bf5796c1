/** Tier 3's plan in words: the `summary` lines of a `direct` profile. */
import type { SandboxCapabilities } from '@aleph/sandbox-core';
import type { SeccompProgram } from '../seccomp/seccomp-program.js';
import { afterRunInWords, journalIn, rlimitsInWords, rulesInWords } from './profile-summary.js';
import type { DirectInputs, LandlockRule, LinuxProfile } from './profile-types.js';

/** Everything a tier 3 summary says. */
export interface DirectSummaryFacts {
  readonly notEnforced: readonly string[];
  readonly identity: LinuxProfile['identity'];
  readonly uid: number | undefined;
  readonly rules: readonly LandlockRule[];
  readonly tcp: { readonly connectPorts: readonly number[] } | null;
  readonly seccomp: SeccompProgram;
  readonly rlimits: Readonly<Record<string, number>>;
  readonly writableRoots: readonly string[];
  readonly checked: { readonly summary: readonly string[] };
  readonly homeChecked: { readonly summary: readonly string[] };
}

/** The summary of a tier 3 plan, the tier and its gaps first. */
export function directSummary(
  net: SandboxCapabilities['network'],
  inputs: DirectInputs,
  facts: DirectSummaryFacts,
): string[] {
  const { identity } = facts;
  return [
    'tier: direct',
    ...facts.notEnforced.map((g) => `not enforced: ${g}`),
    `identity: ${identity.mode === 'keep-uid' ? `uid ${identity.uid} kept, every capability dropped (bounding set included), no_new_privs` : `switches to uid ${facts.uid} with no capabilities`}`,
    'namespaces: none; new session; the launcher kills whatever the command leaves behind',
    `landlock (required): ${rulesInWords(facts.rules)}${facts.tcp ? `; TCP bind refused; TCP connect ${net.kind === 'allowHosts' ? "only to the proxy's port" : 'refused'}` : ''}; abstract unix sockets and signals scoped`,
    ...facts.seccomp.rules.map((r) => `seccomp: ${r}`),
    `limits: ${rlimitsInWords(facts.rlimits)}; processes ≤ ${inputs.maxPids}`,
    ...facts.checked.summary.map((line) => `protected (checked after the run): ${line}`),
    ...facts.homeChecked.summary.map((line) => `protected (home, checked after the run): ${line}`),
    afterRunInWords(facts.writableRoots, journalIn(inputs)),
    `tmp: TMPDIR=${inputs.tmpDir}`,
    ...(inputs.sessionHome === undefined ? [] : [`home: HOME=${inputs.sessionHome}`]),
  ];
}
