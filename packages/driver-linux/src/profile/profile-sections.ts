/** The `seccomp` and `limits` sections of a profile, the same for every tier. */
import type { SandboxCapabilities } from '@aleph/sandbox-core';
import { buildSeccompProgram, type SeccompOptions, type SeccompProgram } from '../seccomp/seccomp-program.js';
import type { NamespaceLimits } from './ns-limits.js';
import type { LinuxProfile } from './profile-types.js';

/**
 * The seccomp program with its settings, the program as base64; when subprocesses are denied, also the
 * program built from `options` without that denial, which a run loads when the change recording's
 * trapping filter refuses (and reports) process creation instead.
 */
export function seccompSection(seccomp: SeccompProgram, options: SeccompOptions): LinuxProfile['seccomp'] {
  const trapped = options.denySpawn ? buildSeccompProgram({ ...options, denySpawn: false }) : undefined;
  return {
    arch: seccomp.arch,
    network: options.network,
    denySpawn: options.denySpawn,
    instructions: seccomp.instructions,
    rules: seccomp.rules,
    program: Buffer.from(seccomp.bytes).toString('base64'),
    ...(trapped === undefined ? {} : { spawnTrappedProgram: Buffer.from(trapped.bytes).toString('base64') }),
  };
}

/** The rlimits, the limits a cgroup would apply, and tier 2's namespace limits. */
export function limitsSection(
  rlimits: Readonly<Record<string, number>>,
  caps: SandboxCapabilities,
  inputs: {
    readonly maxPids: number;
    readonly cpuQuotaPercent: number | undefined;
    readonly nsLimits?: NamespaceLimits | undefined;
  },
): LinuxProfile['limits'] {
  return {
    rlimits,
    maxPids: inputs.maxPids,
    maxMemoryMb: caps.maxMemoryMb ?? null,
    cpuQuotaPercent: inputs.cpuQuotaPercent ?? null,
    pidMax: inputs.nsLimits?.pidMax ?? null,
    userns: inputs.nsLimits?.userns ?? {},
  };
}
