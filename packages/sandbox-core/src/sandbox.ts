import type { ChangesRequest, KeptRun, UndoResult } from './changes.js';
import type { SandboxCommandInput } from './command.js';
import type { SandboxOutput } from './output.js';
import type { OutputCallback } from './runner.js';
import type { SessionId } from './session.js';
import type {
  PipedSpawnCommandInput,
  SandboxProcess,
  SandboxSession,
  SpawnCommandInput,
  SpawnOptions,
  WritableSandboxProcess,
} from './session-api.js';
import type { UndoOptions } from './undo.js';

/** Per-call runtime options that are not part of the (serialisable, audited) command. */
export interface ExecuteOptions {
  /** Aborting kills the whole process tree; `execute` then rejects with `ALEPH_ABORTED`. */
  readonly signal?: AbortSignal;
  /**
   * Live stdout chunks (all of them; the output budget only bounds what is buffered). Return a promise
   * to apply backpressure: the command's stdout is not read until it settles (see {@link OutputCallback}).
   */
  readonly onStdout?: OutputCallback;
  /** Live stderr chunks, with the same backpressure. */
  readonly onStderr?: OutputCallback;
  /**
   * The caller's own operation, not a command a model wrote: an adapter's fixed helper (a file read or
   * write outside the workspace, a manifest step) whose arguments are data. It is exempt from the rate
   * limit that guards the model's commands; the policy, the capabilities and the audit apply as always.
   */
  readonly derived?: boolean;
}

/**
 * The single seam between exec-class tools and the operating system.
 *
 * @example
 * ```ts
 * const out = await sandbox.execute({ sessionId: 's1', program: 'ls', args: ['-la'] })
 * console.log(out.exitCode, out.stdoutText)
 * ```
 */
export interface Sandbox {
  /**
   * Runs one command. Resolves with the output (a non-zero exit or timeout is a value).
   *
   * @throws {AlephError} when the command is denied (policy, capability, rate limit), invalid, aborted,
   *   or the sandbox cannot run it.
   */
  execute(command: SandboxCommandInput, options?: ExecuteOptions): Promise<SandboxOutput>;
  /**
   * Starts one command and resolves with its handle once steps 0-4 passed (streamed output, optional
   * writable stdin, `wait()`, `kill()`). Optional, so that older implementations still compile;
   * `WorkspaceSandbox`, `NoopSandbox` and `MockSandbox` have it.
   */
  spawn?(command: PipedSpawnCommandInput, options?: SpawnOptions): Promise<WritableSandboxProcess>;
  spawn?(command: SpawnCommandInput, options?: SpawnOptions): Promise<SandboxProcess>;
  /**
   * A handle bound to one session: spawn, execute, files, close. Without an id: the enclosing
   * `withSession()` id, else a new random one. Optional, like {@link spawn}.
   */
  session?(sessionId?: SessionId): SandboxSession;
  /**
   * Takes back what run `runId` (`details.runId` of its output) changed in its writable roots: restores
   * every path it modified or deleted, removes what it created. Refused (`undone: false`, nothing
   * touched, `conflicts` naming the paths) when any of them changed after the run, unless `force`.
   * Audited. Optional, like {@link spawn}.
   *
   * @throws {AlephError} `ALEPH_RUN_UNKNOWN` for an id that names no kept run; `ALEPH_UNDO_UNAVAILABLE`
   *   when the driver records no changes or this run's pre-run copies were not kept.
   */
  undo?(runId: string, options?: UndoOptions): Promise<UndoResult>;
  /**
   * The kept change sets: one run's (`{ runId }`), or a workspace's newest first (`{ workspace, limit }`).
   * Optional, like {@link spawn}.
   */
  changes?(request?: ChangesRequest): Promise<readonly KeptRun[]>;
  /** Releases everything the sandbox holds (proxies, sockets, temp dirs). Idempotent. */
  dispose?(): Promise<void>;
}
