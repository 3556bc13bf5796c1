import { mkdir, realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import { ApprovalGate, type ApprovalOutcome } from './approval.js';
import { type CapabilityDecision, type CapabilityLedgerRecord, publishLedgerRecord } from './audit.js';
import {
  explainNotWithin,
  isPathWithin,
  isWithin,
  normalizeCapabilities,
  type SandboxCapabilities,
  strictCapabilities,
} from './capabilities.js';
import { parseSandboxCommand, type SandboxCommand, type SandboxCommandInput } from './command.js';
import { currentSession } from './context.js';
import { type DriverCapabilityId, type OsSandboxDriver, requiredDriverCapabilities } from './driver.js';
import {
  AlephError,
  CapabilityDeniedError,
  DriverError,
  InvalidInputError,
  isAlephError,
  PolicyDeniedError,
} from './errors.js';
import { refuseHiddenBaseline, refuseHiddenGrants } from './hidden-paths.js';
import { HookChain, type SandboxBeforeHook } from './hooks.js';
import { monotonicMs } from './internal/clock.js';
import type { SandboxOutput } from './output.js';
import type { ExecuteOptions, Sandbox } from './sandbox.js';
import { canonicalJson, type SessionId, sessionKeyToFilename } from './session.js';

/** Options of {@link WorkspaceSandbox}. */
export interface WorkspaceSandboxOptions {
  readonly driver: OsSandboxDriver;
  /** Absolute directory under which each session gets `sessionKeyToFilename(id)`. */
  readonly workspaceRoot: string;
  /** The per-session ceiling without approval. Default {@link strictCapabilities}. */
  readonly baseline?: SandboxCapabilities;
  /** Where out-of-baseline requests go. Default: a gate with no requester (denies every elevation). */
  readonly approvalGate?: ApprovalGate;
  /** Before-hooks (step 0), in order. */
  readonly hooks?: HookChain | readonly SandboxBeforeHook[];
  /** Default wall-clock timeout. Default 60 s. */
  readonly defaultTimeoutMs?: number;
  /** Output budget split between stdout and stderr. Default 1 MiB. */
  readonly maxOutputBytes?: number;
  /** Overrides where a session's workspace lives (the CLI's `--workspace DIR`). */
  readonly workspaceFor?: (sessionId: SessionId) => string;
}

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

interface MutableSessionWorkspace extends SessionWorkspace {
  readonly grants: SandboxCapabilities[];
}

interface SharedState {
  readonly sessions: Map<string, Promise<MutableSessionWorkspace>>;
  readonly pendingApprovals: Map<string, Promise<ApprovalOutcome>>;
  disposed: boolean;
}

const DEFAULT_TIMEOUT_MS = 60_000;
/** macOS and Windows filesystems ignore case by default: so does the hidden-path check there. */
const CASE_FOLDING = process.platform === 'darwin' || process.platform === 'win32';
const DEFAULT_MAX_OUTPUT = 1024 * 1024;
const MAX_AUDIT_ARG = 4096;

/**
 * The spec's six-step pipeline in front of an OS driver:
 * 0. before-hooks (policy, rate limit) → 1. session resolve (lazy workspace) → 2. cwd validate →
 * 3. capability check (baseline, cached grant, approval) → 4. profile → 5. run (timeout, output budget) →
 * 6. one audit record on `aleph:capability_ledger`, whatever happened.
 *
 * @example
 * ```ts
 * const sandbox = new WorkspaceSandbox({ driver, workspaceRoot: '/var/lib/aleph/workspaces' })
 * const out = await sandbox.execute({ sessionId: 's1', program: 'ls' })
 * ```
 */
export class WorkspaceSandbox implements Sandbox {
  readonly #options: WorkspaceSandboxOptions;
  readonly #driver: OsSandboxDriver;
  readonly #hooks: HookChain;
  readonly #gate: ApprovalGate;
  readonly #baseline: SandboxCapabilities;
  readonly #timeoutMs: number;
  readonly #maxOutputBytes: number;
  readonly #declared: ReadonlySet<DriverCapabilityId>;
  readonly #state: SharedState;

  constructor(options: WorkspaceSandboxOptions, shared?: SharedState) {
    if (!path.isAbsolute(options.workspaceRoot)) {
      throw new InvalidInputError(
        'ALEPH_CONFIG_INVALID',
        'workspaceRoot',
        options.workspaceRoot,
        'is not absolute',
        'pass an absolute directory such as /var/lib/aleph/workspaces',
      );
    }
    checkPositive('defaultTimeoutMs', options.defaultTimeoutMs);
    checkPositive('maxOutputBytes', options.maxOutputBytes);
    this.#options = options;
    this.#driver = options.driver;
    this.#hooks = options.hooks instanceof HookChain ? options.hooks : new HookChain(options.hooks ?? []);
    this.#gate = options.approvalGate ?? new ApprovalGate();
    this.#baseline = normalizeCapabilities(options.baseline ?? strictCapabilities());
    refuseHiddenBaseline(this.#baseline, options.driver.hiddenPaths ?? [], { ignoreCase: CASE_FOLDING });
    this.#timeoutMs = options.defaultTimeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.#maxOutputBytes = options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT;
    this.#declared = new Set(options.driver.capabilities);
    this.#state = shared ?? { sessions: new Map(), pendingApprovals: new Map(), disposed: false };
  }

  /** A sandbox sharing this one's sessions and grants, with another default timeout. */
  withTimeout(timeoutMs: number): WorkspaceSandbox {
    return new WorkspaceSandbox({ ...this.#options, defaultTimeoutMs: timeoutMs }, this.#state);
  }

  /** A sandbox sharing this one's sessions and grants, with another output budget. */
  withMaxOutputBytes(maxOutputBytes: number): WorkspaceSandbox {
    return new WorkspaceSandbox({ ...this.#options, maxOutputBytes }, this.#state);
  }

  /** The driver in use. */
  get driver(): OsSandboxDriver {
    return this.#driver;
  }

  /** Where `sessionId`'s workspace lives (whether or not it exists yet). */
  workspacePath(sessionId: SessionId): string {
    const custom = this.#options.workspaceFor?.(sessionId);
    return path.resolve(custom ?? path.join(this.#options.workspaceRoot, sessionKeyToFilename(sessionId)));
  }

  /**
   * The session's workspace, created on first use. Concurrent first calls share one creation.
   */
  forSession(sessionId: SessionId): Promise<SessionWorkspace> {
    this.#assertUsable();
    const key = sessionKeyToFilename(sessionId);
    let pending = this.#state.sessions.get(key);
    if (pending === undefined) {
      pending = this.#createWorkspace(sessionId, key);
      this.#state.sessions.set(key, pending);
      pending.catch(() => this.#state.sessions.delete(key));
    }
    return pending;
  }

  async #createWorkspace(sessionId: SessionId, key: string): Promise<MutableSessionWorkspace> {
    const dir = this.workspacePath(sessionId);
    await mkdir(dir, { recursive: true, mode: 0o700 });
    await this.#driver.prepareWorkspace?.(dir);
    return { sessionId, key, cwd: await realpath(dir), baseline: this.#baseline, grants: [] };
  }

  /** Drops a session's cached grants (its directory stays on disk). */
  forgetSession(sessionId: SessionId): void {
    this.#state.sessions.delete(sessionKeyToFilename(sessionId));
  }

  /**
   * Runs one command through the six steps.
   *
   * @throws {PolicyDeniedError} a before-hook denied it (`ALEPH_POLICY_DENIED`, `ALEPH_RATE_LIMITED`).
   * @throws {CapabilityDeniedError} the cwd escapes the workspace, or an elevation was not approved.
   * @throws {InvalidInputError} the command is malformed (`ALEPH_INVALID_COMMAND`).
   * @throws {DriverError} the driver cannot enforce what is asked, or failed.
   * @throws {AlephError} `ALEPH_ABORTED` when `options.signal` aborted it; `ALEPH_DISPOSED` after dispose.
   */
  async execute(input: SandboxCommandInput, options: ExecuteOptions = {}): Promise<SandboxOutput> {
    const startedAt = new Date();
    const t0 = monotonicMs();
    const raw = input as Partial<SandboxCommandInput> | null | undefined;
    const audit: Mutable<CapabilityLedgerRecord> = {
      type: 'capability_ledger',
      time: startedAt.toISOString(),
      sessionId: null,
      workspace: null,
      program: typeof raw?.program === 'string' ? raw.program : '',
      args: Array.isArray(raw?.args) ? raw.args.map(clipArg) : [],
      cwd: null,
      capabilities: null,
      decision: 'not-checked',
      outcome: 'denied',
      exitCode: null,
      signal: null,
      durationMs: 0,
      timedOut: false,
      stdoutTruncated: false,
      stderrTruncated: false,
      denial: null,
      warnings: [],
      driver: this.#driver.name,
    };
    try {
      this.#assertUsable();
      if (options.signal?.aborted) throw abortedError(options.signal);
      const cmd = parseSandboxCommand(input, currentSession());
      audit.sessionId = cmd.sessionId;

      // Step 0: before-hooks.
      const hooks = await this.#hooks.runBefore(cmd);
      audit.warnings = hooks.warnings.map((w) => `${w.hook}: ${w.reason}`);
      if (hooks.denied) {
        const { hook, verdict } = hooks.denied;
        throw new PolicyDeniedError(verdict.code ?? 'ALEPH_POLICY_DENIED', hook, verdict.reason, {
          details: verdict.rules ? { rules: verdict.rules } : {},
        });
      }

      // Steps 1 and 2: session resolve and cwd validate (nothing is created for a cwd we reject).
      const requestedCwd = cmd.cwd === undefined ? undefined : await this.#validateCwd(cmd);
      const ws = await this.forSession(cmd.sessionId);
      const cwd = requestedCwd ?? ws.cwd;
      audit.workspace = ws.cwd;
      audit.cwd = cwd;

      // Step 3: capability check.
      const caps = await resolveCapabilityPaths(cmd.capabilities);
      audit.capabilities = caps;
      // Before approval: nothing approved, cached or configured can make a grant inside a hidden path.
      refuseHiddenGrants(caps, this.#driver.hiddenPaths ?? [], { ignoreCase: CASE_FOLDING });
      await this.#assertDriverCan(caps);
      audit.decision = await this.#checkCapabilities(cmd, caps, ws as MutableSessionWorkspace, cwd);

      // Step 4: profile.
      const profile = await this.#driver.profileFor(caps, cwd, {
        sessionId: cmd.sessionId,
        workspace: ws.cwd,
      });

      // Step 5: run.
      const timeoutMs =
        cmd.timeout ?? (caps.timeoutSecs === undefined ? this.#timeoutMs : caps.timeoutSecs * 1000);
      let output: SandboxOutput;
      try {
        output = await this.#driver.run({
          sessionId: cmd.sessionId,
          workspace: ws.cwd,
          program: cmd.program,
          args: cmd.args,
          env: cmd.env,
          ...(cmd.stdin === undefined ? {} : { stdin: cmd.stdin }),
          cwd,
          capabilities: caps,
          profile,
          timeoutMs,
          maxOutputBytes: this.#maxOutputBytes,
          ...(options.signal === undefined ? {} : { signal: options.signal }),
          ...(options.onStdout === undefined ? {} : { onStdout: options.onStdout }),
          ...(options.onStderr === undefined ? {} : { onStderr: options.onStderr }),
        });
      } catch (error) {
        if (isAlephError(error)) throw error;
        throw new DriverError(
          'ALEPH_DRIVER_FAILED',
          this.#driver.name,
          `driver ${this.#driver.name} failed to run ${cmd.program}: ${error instanceof Error ? error.message : String(error)}`,
          { cause: error },
        );
      }
      audit.exitCode = output.exitCode;
      audit.signal = output.signal;
      audit.timedOut = output.timedOut;
      audit.stdoutTruncated = output.stdoutTruncated;
      audit.stderrTruncated = output.stderrTruncated;
      if (output.details !== undefined) audit.details = output.details;
      if (options.signal?.aborted) throw abortedError(options.signal);
      audit.outcome = output.timedOut ? 'timeout' : 'completed';
      return output;
    } catch (error) {
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
      if (
        aleph.code === 'ALEPH_CAPABILITY_DENIED' &&
        audit.decision === 'not-checked' &&
        audit.cwd !== null
      ) {
        audit.decision = 'denied';
      }
      throw aleph;
    } finally {
      audit.durationMs = monotonicMs() - t0;
      publishLedgerRecord(audit);
    }
  }

  async #validateCwd(cmd: SandboxCommand): Promise<string> {
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
      wsReal = await realpath(this.workspacePath(cmd.sessionId));
    } catch {
      wsReal = undefined;
    }
    if (wsReal === undefined || !isPathWithin(real, wsReal)) {
      throw new CapabilityDeniedError('cwd outside workspace root', {
        details: { cwd: requested, resolved: real, workspace: wsReal ?? this.workspacePath(cmd.sessionId) },
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

  async #assertDriverCan(caps: SandboxCapabilities): Promise<void> {
    const missing = requiredDriverCapabilities(caps).filter((id) => !this.#declared.has(id));
    if (missing.length > 0) {
      let more: string | undefined;
      try {
        more = await this.#driver.explainUnsupported?.(caps, missing);
      } catch (error) {
        more = `(and explaining it failed: ${(error as Error).message})`;
      }
      throw new DriverError(
        'ALEPH_CAPABILITY_UNSUPPORTED',
        this.#driver.name,
        `driver ${this.#driver.name} cannot enforce ${missing.join(', ')}; refusing to run rather than run less confined${more === undefined ? '' : `. ${more}`}`,
        { details: { missing } },
      );
    }
  }

  async #checkCapabilities(
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
    let pending = this.#state.pendingApprovals.get(approvalKey);
    if (pending === undefined) {
      pending = this.#gate.request({
        sessionId: cmd.sessionId,
        program: cmd.program,
        args: cmd.args,
        cwd,
        requested: caps,
        baseline: ceiling,
        reasons,
      });
      this.#state.pendingApprovals.set(approvalKey, pending);
      void pending.finally(() => this.#state.pendingApprovals.delete(approvalKey));
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

  /** Stops accepting commands and disposes the driver. Idempotent. */
  async dispose(): Promise<void> {
    if (this.#state.disposed) return;
    this.#state.disposed = true;
    await this.#driver.dispose?.();
  }

  #assertUsable(): void {
    if (this.#state.disposed) {
      throw new AlephError(
        'ALEPH_DISPOSED',
        'this sandbox was disposed; build a new one to run more commands',
      );
    }
  }
}

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

function clipArg(arg: unknown): string {
  const s = String(arg);
  return s.length > MAX_AUDIT_ARG ? `${s.slice(0, MAX_AUDIT_ARG)}…(${s.length} chars)` : s;
}

function abortedError(signal: AbortSignal): AlephError {
  return new AlephError('ALEPH_ABORTED', 'the command was aborted by its AbortSignal', {
    cause: signal.reason,
  });
}

function checkPositive(field: string, value: number | undefined): void {
  if (value !== undefined && !(Number.isFinite(value) && value > 0)) {
    throw new InvalidInputError(
      'ALEPH_CONFIG_INVALID',
      field,
      value,
      'must be a positive number',
      `set ${field} > 0`,
    );
  }
}

/** Resolves symlinks in requested paths (the deepest existing ancestor for paths that do not exist). */
async function resolveCapabilityPaths(caps: SandboxCapabilities): Promise<SandboxCapabilities> {
  if (caps.fsRead.length === 0 && caps.fsWrite.length === 0) return normalizeCapabilities(caps);
  const resolve = (list: readonly string[]) => Promise.all(list.map(resolveExisting));
  const [fsRead, fsWrite] = await Promise.all([resolve(caps.fsRead), resolve(caps.fsWrite)]);
  return normalizeCapabilities({ ...caps, fsRead, fsWrite });
}

async function resolveExisting(p: string): Promise<string> {
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
