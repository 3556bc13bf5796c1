/**
 * What a capability flag on the command line grants: `aleph-sandbox run --allow-spawn` (and
 * `--allow-read`, `--allow-write`, `--net`, `--publish`, `--memory`) is granted for that run without
 * asking, as `aleph-sandbox mcp` grants it to every command, because the person typing the flag is the one
 * who would approve it. Approval stays for what the command asks beyond them, and hidden paths stay
 * refused whatever the flag (the pipeline refuses a grant inside one before any baseline or approval is
 * looked at).
 */
import { realpathSync } from 'node:fs';
import path from 'node:path';
import {
  type ApprovalRequester,
  explainNotWithin,
  type NetworkPolicy,
  normalizeCapabilities,
  type SandboxCapabilities,
} from '@aleph/sandbox-core';

/** A path's realpath when it exists (the pipeline compares resolved paths), else the path resolved. */
export function realPath(p: string): string {
  try {
    return realpathSync(p);
  } catch {
    return path.resolve(p);
  }
}

function unionNetwork(a: NetworkPolicy, b: NetworkPolicy): NetworkPolicy {
  if (a.kind === 'allowAll' || b.kind === 'allowAll') return { kind: 'allowAll' };
  const hosts = [...(a.kind === 'allowHosts' ? a.hosts : []), ...(b.kind === 'allowHosts' ? b.hosts : [])];
  return hosts.length === 0 ? { kind: 'none' } : { kind: 'allowHosts', hosts };
}

/**
 * `a` and `b` together (paths, hosts and published ports united, spawn if either, `b`'s limits over
 * `a`'s), normalised.
 *
 * @example
 * ```ts
 * unionCapabilities(config.baseline, { ...strictCapabilities(), spawnSubprocess: true }).spawnSubprocess // true
 * ```
 */
export function unionCapabilities(a: SandboxCapabilities, b: SandboxCapabilities): SandboxCapabilities {
  const limit = (key: 'maxMemoryMb' | 'maxFileMb' | 'timeoutSecs') => {
    const v = b[key] ?? a[key];
    return v === undefined ? {} : { [key]: v };
  };
  const ports = [...(a.publishPorts ?? []), ...(b.publishPorts ?? [])];
  return normalizeCapabilities({
    fsRead: [...a.fsRead, ...b.fsRead],
    fsWrite: [...a.fsWrite, ...b.fsWrite],
    network: unionNetwork(a.network, b.network),
    spawnSubprocess: a.spawnSubprocess || b.spawnSubprocess,
    ...limit('maxMemoryMb'),
    ...limit('maxFileMb'),
    ...limit('timeoutSecs'),
    ...(ports.length === 0 ? {} : { publishPorts: ports }),
  });
}

/**
 * The baseline a run or an MCP server works with: `baseline` plus the flag grants, their paths
 * resolved. A memory limit in the grants raises the baseline's memory ceiling when it is above it (a
 * ceiling stays a ceiling: none stays none); below it, the ceiling is kept and the command asks for less.
 */
export function baselineWithGrants(
  baseline: SandboxCapabilities,
  grants: SandboxCapabilities,
): SandboxCapabilities {
  const { maxMemoryMb: memory, ...granted } = grants;
  const resolved = {
    ...granted,
    fsRead: granted.fsRead.map(realPath),
    fsWrite: granted.fsWrite.map(realPath),
  };
  const merged = unionCapabilities(baseline, resolved);
  const ceiling = baseline.maxMemoryMb;
  return ceiling === undefined || memory === undefined || memory <= ceiling
    ? merged
    : { ...merged, maxMemoryMb: memory };
}

/**
 * The approver of a CLI run: what the capability flags grant (`grants`) is approved for this command
 * without asking, since the person typing a flag is the one who would approve it; what the command asks
 * for beyond the baseline and the flags goes to `inner`, with only those items in its reasons. The
 * pipeline refuses a grant inside a hidden path before it asks, so no flag reaches one.
 *
 * @example
 * ```ts
 * buildSandbox(config, { approvalRequester: approvingFlags(flagGrants, denyAllApprovalRequester) })
 * ```
 */
export function approvingFlags(grants: SandboxCapabilities, inner: ApprovalRequester): ApprovalRequester {
  const granted = { ...grants, fsRead: grants.fsRead.map(realPath), fsWrite: grants.fsWrite.map(realPath) };
  return {
    async requestApproval(request, options) {
      const ceiling = unionCapabilities(request.baseline, granted);
      const reasons = explainNotWithin(request.requested, ceiling);
      if (reasons.length === 0) return { outcome: 'approved', scope: 'once' };
      return inner.requestApproval({ ...request, baseline: ceiling, reasons }, options);
    },
  };
}
