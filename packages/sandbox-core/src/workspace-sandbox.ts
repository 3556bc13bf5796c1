// WorkspaceSandbox: the six-step pipeline in front of an OS driver, its sessions (lazy workspaces and
// cached grants) and the entry points on it: execute(), spawn(), session(), files(), dispose().

import { randomUUID } from 'node:crypto';
import { lstat, mkdir, realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import { ApprovalGate, type ApprovalOutcome } from './approval.js';
import { publishLedgerRecord } from './audit.js';
import { normalizeCapabilities, type SandboxCapabilities, strictCapabilities } from './capabilities.js';
import type { ChangesRequest, KeptRun, UndoResult } from './changes.js';
import type { SandboxCommandInput } from './command.js';
import { currentSession } from './context.js';
import type { DriverCapabilityId, OsSandboxDriver } from './driver.js';
import { AlephError, DriverError, InvalidInputError } from './errors.js';
import { createSessionFiles } from './files/session-files.js';
import type { SandboxFiles } from './files/types.js';
import { HIDDEN_PATHS_FOLD_CASE, refuseHiddenBaseline } from './hidden-paths.js';
import { HookChain, type SandboxBeforeHook } from './hooks.js';
import { monotonicMs } from './internal/clock.js';
import type { SandboxOutput } from './output.js';
import {
  abortedError,
  failedRun,
  newAuditRecord,
  type PipelineContext,
  prepareRun,
  type RunRuntime,
  runPrepared,
} from './pipeline-run.js';
import type { MutableSessionWorkspace, SessionWorkspace } from './pipeline-steps.js';
import type { ExecuteOptions, Sandbox } from './sandbox.js';
import type { Killable } from './sandbox-process.js';
import { SessionHandle, type SessionOwner } from './sandbox-session.js';
import { assertSessionId, canonicalJson, type SessionId, sessionKeyToFilename } from './session.js';
import type {
  PipedSpawnCommandInput,
  SandboxProcess,
  SandboxSession,
  SpawnCommandInput,
  SpawnOptions,
  WritableSandboxProcess,
} from './session-api.js';
import { type SpawnDeps, spawnProcess } from './spawn-process.js';
import { refuseSystemWorkspace } from './system-directories.js';
import { listChanges, type UndoOptions, undoRun } from './undo.js';

export type { SessionWorkspace } from './pipeline-steps.js';

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

interface SharedState {
  readonly sessions: Map<string, Promise<MutableSessionWorkspace>>;
  readonly pendingApprovals: Map<string, Promise<ApprovalOutcome>>;
  /** Every process still running (spawned, or executed through a session handle), for dispose. */
  readonly live: Set<Killable>;
  /** Open session handles per session (canonical id); the last one closed ends the session's driver state. */
  readonly handles: Map<string, { readonly id: SessionId; count: number }>;
  disposed: boolean;
}

const DEFAULT_TIMEOUT_MS = 60_000;
const DEFAULT_MAX_OUTPUT = 1024 * 1024;

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
  readonly #baseline: SandboxCapabilities;
  readonly #state: SharedState;
  readonly #ctx: PipelineContext;
  readonly #spawnDeps: SpawnDeps;
  readonly #owner: SessionOwner;

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
    this.#baseline = normalizeCapabilities(options.baseline ?? strictCapabilities());
    refuseHiddenBaseline(this.#baseline, options.driver.hiddenPaths ?? [], {
      ignoreCase: HIDDEN_PATHS_FOLD_CASE,
    });
    this.#state = shared ?? {
      sessions: new Map(),
      pendingApprovals: new Map(),
      live: new Set(),
      handles: new Map(),
      disposed: false,
    };
    this.#ctx = {
      driver: options.driver,
      hooks: options.hooks instanceof HookChain ? options.hooks : new HookChain(options.hooks ?? []),
      gate: options.approvalGate ?? new ApprovalGate(),
      timeoutMs: options.defaultTimeoutMs ?? DEFAULT_TIMEOUT_MS,
      maxOutputBytes: options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT,
      declared: new Set<DriverCapabilityId>(options.driver.capabilities),
      pendingApprovals: this.#state.pendingApprovals,
      workspacePath: (id) => this.workspacePath(id),
      forSession: (id) => this.forSession(id),
    };
    const assertUsable = () => this.#assertUsable();
    this.#spawnDeps = { assertUsable, live: this.#state.live };
    this.#owner = {
      files: {
        driver: options.driver,
        forSession: (id) => this.forSession(id),
        workspacePath: (id) => this.workspacePath(id),
      },
      assertUsable,
      live: this.#state.live,
      workspace: async (id) => (await this.forSession(id)).cwd,
      handleClosed: (id) => this.#handleClosed(id),
      execute: (input, runtime) => this.#execute(input, runtime),
      undo: (runId, opts, scope) => {
        this.#assertUsable();
        return undoRun(this.#driver, runId, opts, scope);
      },
      changes: (request, scope) => {
        this.#assertUsable();
        return listChanges(this.#driver, request, scope);
      },
      spawn: (input, options, session) => spawnProcess(this.#ctx, this.#spawnDeps, input, options, session),
    };
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
    refuseSystemWorkspace(dir);
    await mkdir(dir, { recursive: true, mode: 0o700 });
    await this.#driver.prepareWorkspace?.(dir);
    const cwd = await realpath(dir);
    await this.#sameDirectory(dir, cwd);
    return { sessionId, key, cwd, baseline: this.#baseline, grants: [] };
  }

  /**
   * The workspace is the directory named `dir` itself, never what a symlink in its place led to: a command
   * of another session that can write where `dir` lies could swap it for a symlink out while it resolves.
   *
   * @throws {DriverError} `ALEPH_DRIVER_FAILED` when `dir` is a symlink, or not the directory `real` is.
   */
  async #sameDirectory(dir: string, real: string): Promise<void> {
    const [named, resolved] = await Promise.all([lstat(dir), stat(real)]);
    if (named.isDirectory() && named.dev === resolved.dev && named.ino === resolved.ino) return;
    const name = this.#driver.name;
    throw new DriverError(
      'ALEPH_DRIVER_FAILED',
      name,
      `the workspace ${dir} ${named.isSymbolicLink() ? `is a symlink (to ${real})` : 'changed while it was resolved'}, which a command could have swapped: name the directory itself as the workspace (or, if another command moved it, run again)`,
    );
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
  execute(input: SandboxCommandInput, options: ExecuteOptions = {}): Promise<SandboxOutput> {
    return this.#execute(input, options);
  }

  async #execute(input: unknown, runtime: RunRuntime): Promise<SandboxOutput> {
    const t0 = monotonicMs();
    const audit = newAuditRecord(input, this.#driver.name);
    try {
      this.#assertUsable();
      if (runtime.signal?.aborted) throw abortedError(runtime.signal);
      const request = await prepareRun(this.#ctx, input, runtime, audit);
      return await runPrepared(this.#ctx, request, runtime, audit);
    } catch (error) {
      throw failedRun(audit, error);
    } finally {
      audit.durationMs = monotonicMs() - t0;
      publishLedgerRecord(audit);
    }
  }

  /**
   * Starts one command and resolves with its handle (streamed stdout/stderr, optional writable stdin,
   * `wait()`, `kill()`) once steps 0-4 passed; a denial rejects exactly as {@link execute} would. The
   * audit record is published when the process tree has ended.
   *
   * @example
   * ```ts
   * const proc = await sandbox.spawn({ sessionId: 's1', program: 'cat', stdin: 'pipe' })
   * ```
   * @throws {AlephError} what {@link execute} throws for steps 0-4; `ALEPH_CAPABILITY_UNSUPPORTED` for
   *   `stdin: 'pipe'` on a driver that does not declare `exec.stdin-stream`.
   */
  spawn(command: PipedSpawnCommandInput, options?: SpawnOptions): Promise<WritableSandboxProcess>;
  spawn(command: SpawnCommandInput, options?: SpawnOptions): Promise<SandboxProcess>;
  spawn(command: SpawnCommandInput, options: SpawnOptions = {}): Promise<SandboxProcess> {
    return spawnProcess(this.#ctx, this.#spawnDeps, command, options);
  }

  /**
   * A handle bound to one session (spawn, execute, files, close). Without an id: the enclosing
   * `withSession()` id, else a new random one (a fresh session).
   *
   * @example
   * ```ts
   * const session = sandbox.session('chat-1')
   * await session.files.writeFile('a.txt', 'hi')
   * ```
   * @throws {InvalidInputError} `ALEPH_INVALID_COMMAND` for an id that is not plain JSON.
   */
  session(sessionId?: SessionId): SandboxSession {
    this.#assertUsable();
    const id = assertSessionId(sessionId ?? currentSession() ?? randomUUID(), 'sessionId');
    const handle = new SessionHandle(this.#owner, id);
    const key = canonicalJson(id);
    const open = this.#state.handles.get(key);
    if (open === undefined) this.#state.handles.set(key, { id, count: 1 });
    else open.count++;
    return handle;
  }

  /** One handle of `id` fewer: the last one ends the session's state in the driver (its /tmp). */
  async #handleClosed(id: SessionId): Promise<void> {
    const key = canonicalJson(id);
    const open = this.#state.handles.get(key);
    if (open === undefined || --open.count > 0) return;
    this.#state.handles.delete(key);
    await this.#driver.closeSession?.(id).catch(() => undefined);
  }

  /**
   * The files of a session, without a handle to close (see {@link SandboxFiles}); refused after dispose.
   */
  files(sessionId: SessionId): SandboxFiles {
    const id = assertSessionId(sessionId, 'sessionId');
    return createSessionFiles({ ...this.#owner.files, assertOpen: () => this.#assertUsable() }, id);
  }

  /**
   * Takes back what run `runId` changed (see `Sandbox.undo`), with one audit record (`type: 'undo'`).
   *
   * @example
   * ```ts
   * const out = await sandbox.execute({ sessionId: 's1', program: 'rm', args: ['-r', 'src'] })
   * const result = await sandbox.undo(String(out.details?.runId))
   * ```
   * @throws {AlephError} `ALEPH_RUN_UNKNOWN`, `ALEPH_UNDO_UNAVAILABLE`, `ALEPH_DISPOSED`.
   */
  async undo(runId: string, options: UndoOptions = {}): Promise<UndoResult> {
    this.#assertUsable();
    return undoRun(this.#driver, runId, options);
  }

  /** The kept change sets: one run's (`{ runId }`) or a workspace's, newest first (see `Sandbox.changes`). */
  async changes(request: ChangesRequest = {}): Promise<readonly KeptRun[]> {
    this.#assertUsable();
    return listChanges(this.#driver, request);
  }

  /**
   * Stops accepting commands, kills every process still running (spawned ones and those of session
   * handles, which are closed) and disposes the driver. Idempotent.
   */
  async dispose(): Promise<void> {
    if (this.#state.disposed) return;
    this.#state.disposed = true;
    await Promise.all([...this.#state.live].map((p) => p.kill()));
    const sessions = [...this.#state.handles.values()];
    this.#state.handles.clear();
    await Promise.all(sessions.map((s) => this.#driver.closeSession?.(s.id).catch(() => undefined)));
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
