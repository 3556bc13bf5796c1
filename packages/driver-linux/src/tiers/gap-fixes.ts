/** What closes each gap a tier or the limits leave open: a stronger tier, a delegated cgroup, a setting. */
import type { CgroupInfo } from '../host/cgroup.js';
import type { TierAttempt } from './select-tier.js';
import { type LinuxTierId, linuxTier } from './tiers.js';

/** What decides how a gap can be closed. */
export interface GapFixContext {
  /** The tier in use. */
  readonly tier: LinuxTierId;
  /** The preflight's attempts: a stronger tier that failed says how to make it work. */
  readonly attempts: readonly TierAttempt[];
  /** The cgroup check (its fix, when it failed, is what every limit gap needs). */
  readonly cgroup: CgroupInfo;
  /** The host process runs as root. */
  readonly isRoot: boolean;
}

const TIER_GAPS = new Set([
  'host-processes',
  'host-tmp',
  'dev-shm',
  'host-network',
  'transparent-egress',
  'protected-paths-during-run',
  'root-listing',
]);

/** How to get a tier stronger than the one in use (or `only` that one): each failed attempt's fix. */
function strongerTier(ctx: GapFixContext, only?: LinuxTierId): string | undefined {
  const current = linuxTier(ctx.tier).number;
  const ways = ctx.attempts
    .filter((a) => !a.ok && a.fix !== undefined && linuxTier(a.tier).number < current)
    .filter((a) => only === undefined || a.tier === only)
    .map((a) => `make tier ${linuxTier(a.tier).number} work: ${a.fix}`);
  return ways.length === 0 ? undefined : ways.join('; or ');
}

const only = (more: string | undefined) => (more === undefined ? '' : `, or ${more}`);

function cgroupFix(ctx: GapFixContext): string {
  return `a delegated cgroup v2, which bounds the whole execution: ${ctx.cgroup.fix ?? ctx.cgroup.detail}`;
}

/**
 * The change that closes each gap in `gaps` (`name: sentence`, as `notEnforced` lists them) here, by name:
 * a stronger tier (what its failed preflight attempt needs), a delegated cgroup v2 (the cgroup check's
 * fix), or a setting. A gap nothing in the sandbox can close says what can, outside it.
 */
export function linuxGapFixes(gaps: readonly string[], ctx: GapFixContext): Record<string, string> {
  const out: Record<string, string> = {};
  for (const gap of gaps) {
    const name = gap.slice(0, gap.indexOf(':'));
    let fix: string | undefined;
    if (TIER_GAPS.has(name)) fix = strongerTier(ctx);
    else if (name === 'root-file-identity')
      fix =
        ctx.tier === 'direct'
          ? `set a uid for the commands (\`[sandbox.linux] sandbox_uid\`, driver option sandboxUid)${only(strongerTier(ctx, 'namespaces'))}`
          : strongerTier(ctx, 'namespaces');
    else if (name === 'process-limit')
      fix = `${cgroupFix(ctx)}${ctx.tier === 'direct' ? '; or set a uid for the commands (`[sandbox.linux] sandbox_uid`): RLIMIT_NPROC binds every uid but 0' : `; or Linux 6.14 or later, where the helper bounds the sandbox's PID namespace with a pid_max of its own${only(strongerTier(ctx, 'namespaces'))}`}`;
    else if (name === 'limit.pids (uid 0)')
      fix = `${cgroupFix(ctx)}${only(strongerTier(ctx, 'namespaces'))}; or run the host side as a non-root user, whose commands RLIMIT_NPROC binds to max_pids exactly`;
    else if (name === 'limit.memory' || name === 'limit.pids' || name === 'limit.cpu') fix = cgroupFix(ctx);
    else if (name === 'limit.memory (memfd, SysV shm)')
      fix = `${cgroupFix(ctx)}; and set max_file_mb (\`[sandbox.linux] max_file_mb\`), which bounds each file and memfd`;
    else if (name === 'host-proc')
      fix =
        'unmask /proc, so the kernel allows a fresh one: `--security-opt systempaths=unconfined` (podman also `--security-opt unmask=ALL`)';
    else if (name === 'limit.file-size')
      fix = 'set max_file_mb (`[sandbox.linux] max_file_mb`, driver option maxFileMb)';
    else if (name === 'per-uid limits')
      fix = ctx.isRoot
        ? 'leave sandbox_uid unset, so each running command gets a uid of its own (`[sandbox.linux] sandbox_uid_range`)'
        : 'run the host process as root, so each command gets a uid of its own, or run each agent as a user of its own';
    else if (name === 'absent-protected-paths-during-run')
      fix =
        'create the protected paths the host reads (an empty .envrc, .git/hooks, …) before the command runs: those that exist are read-only for it; or keep host tools off the workspace while a command runs';
    else if (name === 'disk')
      fix =
        "outside the sandbox: put the workspaces, write grants and the state directory (sessions' /tmp) on a filesystem with quotas, or a size-limited volume";
    else if (name === 'tmpfs')
      fix =
        'boot a kernel >= 5.13 with Landlock enabled (`lsm=landlock,…`), which keeps bubblewrap’s own tmpfs mounts read-only';
    if (fix !== undefined) out[name] = fix;
  }
  return out;
}
