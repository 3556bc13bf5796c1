/**
 * What the launcher runs after its `--`: bwrap and its arguments up to the helper (tiers 1–2) or the
 * helper `--direct` (tier 3), the run's process limit and the helper's set-up status channel, then the
 * program and its arguments.
 */
import type { DriverRunRequest } from '@aleph/sandbox-core';
import type { HostFacts } from '../host/host-facts.js';
import { PROXY_PORT_ARG } from '../profile/direct-profile.js';
import type { LinuxProfile } from '../profile/profile-types.js';
import { processesOf } from './process-count.js';

/** Where the programs are, and the loopback proxy's port of a tier 3 allowHosts run. */
export interface ArgvContext {
  readonly host: HostFacts;
  readonly helperPath: string;
  readonly bwrapPath: string;
  readonly proxyPort: number | undefined;
  /** The run's own entrance of the proxy (tiers 1–2), bound in place of the plan's proxy socket. */
  readonly proxySocket?: string | undefined;
}

/** The argv of one run. */
export function commandArgv(profile: LinuxProfile, request: DriverRunRequest, ctx: ArgvContext): string[] {
  const args =
    profile.tier === 'direct'
      ? [
          ctx.helperPath,
          '--direct',
          ...profile.helperArgs.map((a) => (a === PROXY_PORT_ARG ? String(ctx.proxyPort) : a)),
          '--',
        ]
      : [ctx.bwrapPath, ...withSocket(profile.bwrapArgs, profile.network.proxySocket, ctx.proxySocket)];
  // Both end in the helper's `--`: the process limit is one of its options, and so is its set-up status
  // channel, a pipe the launcher makes in place of @STATUS (native/linux/launcher/setup-status.c).
  args.splice(
    args.length - 1,
    0,
    '--rlimit',
    `NPROC=${processLimit(profile, ctx.host)}`,
    '--status-fd',
    '@STATUS',
  );
  args.push(request.program, ...request.args);
  return args;
}

/** bwrap's arguments with the plan's proxy socket (the pool's) replaced by the run's own entrance. */
function withSocket(
  args: readonly string[],
  planned: string | null,
  run: string | undefined,
): readonly string[] {
  if (planned === null || run === undefined) return args;
  return args.map((a) => (a === planned ? run : a));
}

/**
 * RLIMIT_NPROC counts the tasks of the command's kernel uid in its user namespace. Tier 2 on a non-root host
 * has a user namespace of its own per run, where only bwrap's init (PID 1) runs beside the command (the
 * host user's other processes are not counted there): max_pids + 1. Elsewhere the uid's count is the whole
 * host's: a shared uid's budget is on top of what it already runs; a uid of the run's own starts from
 * nothing (tier 1's init is root's).
 */
function processLimit(profile: LinuxProfile, host: HostFacts): number {
  if (profile.tier === 'user-namespace' && !host.isRoot) return profile.limits.maxPids + 1;
  const sharedUid = !host.isRoot
    ? host.uid
    : profile.identity.mode === 'drop-to-uid' && typeof profile.identity.uid === 'number'
      ? profile.identity.uid
      : undefined;
  return profile.limits.maxPids + (sharedUid === undefined ? 0 : processesOf(sharedUid));
}
