// Steps 2 and 3 of the pipeline, shared by execute(), spawn() and the session file API: the cwd check,
// the driver-capability check, the capability check against the baseline, cached grants and approval,
// and the realpath of requested paths.
import { realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import type { ApprovalGate, ApprovalOutcome } from './approval.js';
import type { CapabilityDecision } from './audit.js';
import {
  explainNotWithin,
  isPathWithin,
  isWithin,
  normalizeCapabilities,
  type SandboxCapabilities,
} from './capabilities.js';
import type { SandboxCommand } from './command.js';
import { type DriverCapabilityId, type OsSandboxDriver, requiredDriverCapabilities } from './driver.js';
import { CapabilityDeniedError, DriverError, InvalidInputError } from './errors.js';
import { canonicalJson, type SessionId } from './session.js';

/** A session's materialised workspace and its cached grants. */
export interface SessionWorkspace {
  readonly sessionId: SessionId;
  /** `sessionKeyToFilename(sessionId)`. */
  readonly key: string;
  /** The workspace directory, realpath-resolved. */
  readonly cwd: string;
  readonly baseline: SandboxCapabilities;
  /** Elevations approved for the rest of the session. */
  readonly grants: readonly SandboxCapabilities[];
}

export interface MutableSessionWorkspace extends SessionWorkspace {
  readonly grants: SandboxCapabilities[];
}

/**
 * Step 2: `cmd.cwd` must exist, be a directory and realpath-resolve inside the session workspace.
 *
 * @throws {CapabilityDeniedError} it resolves outside the workspace.
 * @throws {InvalidInputError} it does not exist or is not a directory.
 */
export async function validateCwd(cmd: SandboxCommand, workspacePath: string): Promise<string> {
  const requested = cmd.cwd as string;
  let real: string;
  try {
    real = await realpath(requested);
  } catch {
    throw new InvalidInputError(
      'ALEPH_INVALID_COMMAND',
      'command.cwd',
      requested,
      'does not exist',
      'pass an existing directory inside the session workspace, or omit cwd for the workspace root',
    );
  }
  let wsReal: string | undefined;
  try {
    wsReal = await realpath(workspacePath);
  } catch {
    wsReal = undefined;
  }
  if (wsReal === undefined || !isPathWithin(real, wsReal)) {
    throw new CapabilityDeniedError('cwd outside workspace root', {
      details: { cwd: requested, resolved: real, workspace: wsReal ?? workspacePath },
    });
  }
  if (!(await stat(real)).isDirectory()) {
    throw new InvalidInputError(
      'ALEPH_INVALID_COMMAND',
      'command.cwd',
      requested,
      'is not a directory',
      'pass a directory inside the session workspace',
    );
  }
  return real;
}

/**
 * Refuses (fail closed) a command needing a driver capability the driver did not declare.
 *
 * @throws {DriverError} `ALEPH_CAPABILITY_UNSUPPORTED` naming the missing ids.
 */
export async function assertDriverCan(
  driver: OsSandboxDriver,
  declared: ReadonlySet<DriverCapabilityId>,
  caps: SandboxCapabilities,
): Promise<void> {
  const missing = requiredDriverCapabilities(caps).filter((id) => !declared.has(id));
  if (missing.length > 0) {
    let more: string | undefined;
    try {
      more = await driver.explainUnsupported?.(caps, missing);
    } catch (error) {
      more = `(and explaining it failed: ${(error as Error).message})`;
    }
    throw new DriverError(
      'ALEPH_CAPABILITY_UNSUPPORTED',
      driver.name,
      `driver ${driver.name} cannot enforce ${missing.join(', ')}; refusing to run rather than run less confined${more === undefined ? '' : `. ${more}`}`,
      { details: { missing } },
    );
  }
}

/**
 * Step 3: within the baseline (plus the workspace) → pass; within a cached grant → pass; else one
 * approval request per (session, capabilities) at a time. An approval for the session is cached.
 *
 * @throws {CapabilityDeniedError} approval denied or timed out.
 */
export async function checkCapabilities(
  gate: ApprovalGate,
  pendingApprovals: Map<string, Promise<ApprovalOutcome>>,
  cmd: SandboxCommand,
  caps: SandboxCapabilities,
  ws: MutableSessionWorkspace,
  cwd: string,
): Promise<CapabilityDecision> {
  const ceiling: SandboxCapabilities = { ...ws.baseline, fsWrite: [...ws.baseline.fsWrite, ws.cwd] };
  if (isWithin(caps, ceiling)) return 'baseline';
  if (ws.grants.some((grant) => isWithin(caps, grant))) return 'cached-grant';
  const reasons = explainNotWithin(caps, ceiling);
  const approvalKey = `${ws.key}\n${canonicalJson(caps as never)}`;
  let pending = pendingApprovals.get(approvalKey);
  if (pending === undefined) {
    pending = gate.request({
      sessionId: cmd.sessionId,
      program: cmd.program,
      args: cmd.args,
      cwd,
      requested: caps,
      baseline: ceiling,
      reasons,
    });
    pendingApprovals.set(approvalKey, pending);
    void pending.finally(() => pendingApprovals.delete(approvalKey));
  }
  const outcome = await pending;
  if (outcome.outcome === 'approved') {
    if (outcome.scope === 'once') return 'approved-once';
    if (!ws.grants.some((grant) => isWithin(caps, grant))) {
      ws.grants.push({ ...caps, fsWrite: [...caps.fsWrite, ws.cwd] });
    }
    return 'approved';
  }
  const why =
    outcome.outcome === 'timeout'
      ? 'approval timed out'
      : `approval denied${outcome.reason ? ` (${outcome.reason})` : ''}`;
  throw new CapabilityDeniedError(`${why} for ${reasons.join('; ')}`, {
    details: { requested: caps, reasons, outcome: outcome.outcome },
  });
}

/** Resolves symlinks in requested paths (the deepest existing ancestor for paths that do not exist). */
export async function resolveCapabilityPaths(caps: SandboxCapabilities): Promise<SandboxCapabilities> {
  if (caps.fsRead.length === 0 && caps.fsWrite.length === 0) return normalizeCapabilities(caps);
  const resolve = (list: readonly string[]) => Promise.all(list.map(resolveExisting));
  const [fsRead, fsWrite] = await Promise.all([resolve(caps.fsRead), resolve(caps.fsWrite)]);
  return normalizeCapabilities({ ...caps, fsRead, fsWrite });
}

/** The realpath of `p`'s deepest existing ancestor, with the missing rest appended. */
export async function resolveExisting(p: string): Promise<string> {
  let current = path.resolve(p);
  const rest: string[] = [];
  for (;;) {
    try {
      const real = await realpath(current);
      return rest.length === 0 ? real : path.join(real, ...rest.reverse());
    } catch {
      const parent = path.dirname(current);
      if (parent === current) return path.resolve(p);
      rest.push(path.basename(current));
      current = parent;
    }
  }
}
