// One execution through the pipeline, shared by execute() and spawn(): steps 0-4 (prepareRun), step 5
// (runPrepared), and the audit record of step 6 (failedRun, publishLedgerRecord; its draft: audit-draft.ts).
import path from 'node:path';
import type { ApprovalGate, ApprovalOutcome } from './approval.js';
import type { AuditDraft } from './audit-draft.js';
import { parseSandboxCommand } from './command.js';
import { currentSession } from './context.js';
import { boundOutputDetails } from './details-bound.js';
import type { DriverCapabilityId, DriverRunRequest, OsSandboxDriver } from './driver.js';
import { AlephError, DriverError, InvalidInputError, isAlephError, PolicyDeniedError } from './errors.js';
import { HIDDEN_PATHS_FOLD_CASE, refuseHiddenGrants } from './hidden-paths.js';
import type { HookChain } from './hooks.js';
import { createSandboxOutput, type SandboxOutput } from './output.js';
import {
  assertDriverCan,
  checkCapabilities,
  type MutableSessionWorkspace,
  resolveCapabilityPaths,
  type SessionWorkspace,
  validateCwd,
} from './pipeline-steps.js';
import type { OutputCallback } from './runner.js';
import { canonicalJson, type SessionId } from './session.js';
import type { StdinSource } from './stdin-feed.js';

export { type AuditDraft, newAuditRecord } from './audit-draft.js';

/** What one run needs of its `WorkspaceSandbox`. */
export interface PipelineContext {
  readonly driver: OsSandboxDriver;
  readonly hooks: HookChain;
  readonly gate: ApprovalGate;
  readonly timeoutMs: number;
  readonly maxOutputBytes: number;
  readonly declared: ReadonlySet<DriverCapabilityId>;
  readonly pendingApprovals: Map<string, Promise<ApprovalOutcome>>;
  workspacePath(sessionId: SessionId): string;
  forSession(sessionId: SessionId): Promise<SessionWorkspace>;
}

/** What a run gets besides its (audited) command. */
export interface RunRuntime {
  /** The caller's signal: its abort kills the tree and rejects with `ALEPH_ABORTED`. */
  readonly signal?: AbortSignal | undefined;
  /** The handle's kill signal (its reason a `KillRequest`): the run resolves with `killedBy: 'kill'`. */
  readonly kill?: AbortSignal | undefined;
  /** Replaces the command's stdin (a spawn's `'pipe'`). */
  readonly stdin?: StdinSource | undefined;
  readonly onStdout?: OutputCallback | undefined;
  readonly onStderr?: OutputCallback | undefined;
  /** The session the command runs in (a session handle's): a relative cwd is resolved in its workspace. */
  readonly session?: SessionId | undefined;
  /** An adapter's own operation (see `ExecuteOptions.derived`). */
  readonly derived?: boolean | undefined;
}

/** `ALEPH_ABORTED` for the caller's signal. */
export function abortedError(signal: AbortSignal): AlephError {
  return new AlephError('ALEPH_ABORTED', 'the command was aborted by its AbortSignal', {
    cause: signal.reason,
  });
}

/** Records a failed run in its audit record and gives the error to throw (always an `AlephError`). */
export function failedRun(audit: AuditDraft, error: unknown): AlephError {
  const aleph = isAlephError(error)
    ? error
    : new AlephError('ALEPH_DRIVER_FAILED', String(error instanceof Error ? error.message : error), {
        cause: error,
      });
  audit.denial = { code: aleph.code, reason: aleph.message };
  audit.outcome =
    aleph.code === 'ALEPH_ABORTED'
      ? 'aborted'
      : aleph.code === 'ALEPH_DRIVER_FAILED' || aleph.code === 'ALEPH_DRIVER_UNAVAILABLE'
        ? 'error'
        : 'denied';
  if (aleph.code === 'ALEPH_CAPABILITY_DENIED' && audit.decision === 'not-checked' && audit.cwd !== null) {
    audit.decision = 'denied';
  }
  return aleph;
}

/** A session handle's command: its session id (a different one refused), a relative cwd made absolute. */
function inSession(ctx: PipelineContext, input: unknown, session: SessionId): unknown {
  if (typeof input !== 'object' || input === null) return input;
  const raw = input as { sessionId?: unknown; cwd?: unknown };
  if (
    raw.sessionId !== undefined &&
    canonicalJson(raw.sessionId, 'command.sessionId') !== canonicalJson(session)
  ) {
    throw new InvalidInputError(
      'ALEPH_INVALID_COMMAND',
      'command.sessionId',
      raw.sessionId,
      `differs from the session handle's id ${canonicalJson(session)}`,
      'omit sessionId in a session handle, or use the handle of that session',
    );
  }
  const cwd =
    typeof raw.cwd === 'string' && raw.cwd !== '' && !raw.cwd.includes('\0') && !path.isAbsolute(raw.cwd)
      ? path.resolve(ctx.workspacePath(session), raw.cwd)
      : raw.cwd;
  return { ...input, sessionId: session, ...(cwd === undefined ? {} : { cwd }) };
}

/**
 * Steps 0-4: before-hooks, session resolve, cwd validate, capability check, profile. Returns the driver
 * request of step 5. Fills `audit` as it goes; throws the denial.
 */
export async function prepareRun(
  ctx: PipelineContext,
  input: unknown,
  runtime: RunRuntime,
  audit: AuditDraft,
): Promise<DriverRunRequest> {
  const cmd = parseSandboxCommand(
    runtime.session === undefined ? input : inSession(ctx, input, runtime.session),
    currentSession(),
  );
  audit.sessionId = cmd.sessionId;

  // Step 0: before-hooks.
  const hooks = await ctx.hooks.runBefore(cmd, { derived: runtime.derived === true });
  audit.warnings = hooks.warnings.map((w) => `${w.hook}: ${w.reason}`);
  if (hooks.denied) {
    const { hook, verdict } = hooks.denied;
    throw new PolicyDeniedError(verdict.code ?? 'ALEPH_POLICY_DENIED', hook, verdict.reason, {
      details: verdict.rules ? { rules: verdict.rules } : {},
    });
  }

  // Steps 1 and 2: session resolve and cwd validate (nothing is created for a cwd we reject).
  const requestedCwd =
    cmd.cwd === undefined ? undefined : await validateCwd(cmd, ctx.workspacePath(cmd.sessionId));
  const ws = await ctx.forSession(cmd.sessionId);
  const cwd = requestedCwd ?? ws.cwd;
  audit.workspace = ws.cwd;
  audit.cwd = cwd;

  // Step 3: capability check.
  const caps = await resolveCapabilityPaths(cmd.capabilities);
  audit.capabilities = caps;
  // Before approval: nothing approved, cached or configured can make a grant inside a hidden path.
  refuseHiddenGrants(caps, ctx.driver.hiddenPaths ?? [], { ignoreCase: HIDDEN_PATHS_FOLD_CASE });
  await assertDriverCan(ctx.driver, ctx.declared, caps);
  audit.decision = await checkCapabilities(
    ctx.gate,
    ctx.pendingApprovals,
    cmd,
    caps,
    ws as MutableSessionWorkspace,
    cwd,
  );

  // Step 4: profile.
  const profile = await ctx.driver.profileFor(caps, cwd, { sessionId: cmd.sessionId, workspace: ws.cwd });
  const stdin = cmd.stdin;
  return {
    runId: audit.runId,
    sessionId: cmd.sessionId,
    workspace: ws.cwd,
    program: cmd.program,
    args: cmd.args,
    env: cmd.env,
    ...(stdin === undefined ? {} : { stdin }),
    cwd,
    capabilities: caps,
    profile,
    timeoutMs: cmd.timeout ?? (caps.timeoutSecs === undefined ? ctx.timeoutMs : caps.timeoutSecs * 1000),
    maxOutputBytes: ctx.maxOutputBytes,
  };
}

/** The signal the driver gets: the caller's, the handle's kill, or either. */
function runSignal(runtime: RunRuntime): AbortSignal | undefined {
  if (runtime.kill === undefined) return runtime.signal;
  if (runtime.signal === undefined) return runtime.kill;
  return AbortSignal.any([runtime.signal, runtime.kill]);
}

/**
 * Step 5: runs the prepared request on the driver, and fills the audit record with the result.
 *
 * @throws {AlephError} `ALEPH_ABORTED` when the caller's signal fired; the driver's error (a non-Aleph
 *   error becomes `ALEPH_DRIVER_FAILED`).
 */
export async function runPrepared(
  ctx: PipelineContext,
  prepared: DriverRunRequest,
  runtime: RunRuntime,
  audit: AuditDraft,
): Promise<SandboxOutput> {
  const signal = runSignal(runtime);
  let output: SandboxOutput;
  try {
    output = await ctx.driver.run({
      ...prepared,
      ...(runtime.stdin === undefined ? {} : { stdin: runtime.stdin }),
      ...(signal === undefined ? {} : { signal }),
      ...(runtime.onStdout === undefined ? {} : { onStdout: runtime.onStdout }),
      ...(runtime.onStderr === undefined ? {} : { onStderr: runtime.onStderr }),
    });
  } catch (error) {
    if (isAlephError(error)) throw error;
    const name = ctx.driver.name;
    throw new DriverError(
      'ALEPH_DRIVER_FAILED',
      name,
      `driver ${name} failed to run ${prepared.program}: ${error instanceof Error ? error.message : String(error)}`,
      { cause: error },
    );
  }
  output = boundOutputDetails(output, prepared.maxOutputBytes);
  // A driver that does not know kill requests reports the handle's kill as an abort.
  const killed = runtime.kill?.aborted && !runtime.signal?.aborted && output.details?.killedBy === 'abort';
  // The pipeline's run id wins over whatever the driver put in details.runId.
  output = createSandboxOutput({
    ...output,
    details: { ...output.details, ...(killed ? { killedBy: 'kill' } : {}), runId: prepared.runId },
  });
  audit.exitCode = output.exitCode;
  audit.signal = output.signal;
  audit.timedOut = output.timedOut;
  audit.stdoutTruncated = output.stdoutTruncated;
  audit.stderrTruncated = output.stderrTruncated;
  if (output.details !== undefined) audit.details = output.details;
  if (runtime.signal?.aborted) throw abortedError(runtime.signal);
  audit.outcome = output.timedOut ? 'timeout' : output.details?.killedBy === 'kill' ? 'killed' : 'completed';
  return output;
}
