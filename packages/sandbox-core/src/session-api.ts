// The public shape of the session API: a session handle (SandboxSession), what spawn() takes
// (SpawnCommandInput, SpawnOptions) and the process handle it gives (SandboxProcess). Implemented by
// sandbox-session.ts and sandbox-process.ts on the WorkspaceSandbox pipeline.
import type { KeptRun, UndoResult } from './changes.js';
import type { SandboxCommandInput } from './command.js';
import type { SandboxFiles } from './files/types.js';
import type { KillSignal } from './kill-request.js';
import type { SandboxOutput } from './output.js';
import type { ExecuteOptions } from './sandbox.js';
import type { SessionId } from './session.js';
import type { UndoOptions } from './undo.js';

/**
 * A command for `spawn()`: a {@link SandboxCommandInput} whose `stdin` may also be `'pipe'`, for a
 * writable `stdin` on the process handle (the program reads until that stream is closed). Text or bytes
 * are written, then stdin is closed; without `stdin` the program reads nothing (`/dev/null`). The text
 * `'pipe'` always means the pipe: to send those four letters, pass them as bytes.
 *
 * In a session (`session.spawn`, `session.execute`) the session id is the session's (a different
 * `sessionId` is refused with `ALEPH_INVALID_COMMAND`), and a relative `cwd` is resolved against the
 * session workspace.
 */
export interface SpawnCommandInput extends Omit<SandboxCommandInput, 'stdin'> {
  readonly stdin?: 'pipe' | string | Uint8Array;
}

/** A {@link SpawnCommandInput} with a writable stdin. */
export type PipedSpawnCommandInput = SpawnCommandInput & { readonly stdin: 'pipe' };

/** Per-call options of `spawn()`. */
export interface SpawnOptions {
  /**
   * Aborting it kills the whole process tree; `wait()` then rejects with `ALEPH_ABORTED` (and a `spawn()`
   * still in steps 0-4 rejects with it).
   */
  readonly signal?: AbortSignal;
}

/** Options of {@link SandboxProcess.kill}. */
export interface KillOptions {
  /** After a `SIGTERM`/`SIGINT`, how long before the tree is killed with `SIGKILL`. Default 2000 ms. */
  readonly graceMs?: number;
}

/**
 * A running sandboxed command. Its output arrives on `stdout`/`stderr` as WHATWG byte streams, every
 * byte, with backpressure: a stream nobody reads pauses the command once its queue (64 KiB) and the
 * pipe are full, so memory stays bounded; the timeout still runs. Cancelling a stream stops its
 * delivery; `wait()` still gets the output within the budget.
 *
 * @example
 * ```ts
 * const proc = await session.spawn({ program: 'sh', args: ['-c', 'read x; echo got $x'], stdin: 'pipe', capabilities: { spawnSubprocess: true } })
 * const writer = proc.stdin.getWriter()
 * await writer.write(new TextEncoder().encode('hello\n'))
 * await writer.close()                       // EOF
 * for await (const chunk of proc.stdout) process.stdout.write(chunk)
 * const out = await proc.wait()              // out.exitCode === 0
 * ```
 */
export interface SandboxProcess {
  readonly sessionId: SessionId;
  readonly stdout: ReadableStream<Uint8Array>;
  readonly stderr: ReadableStream<Uint8Array>;
  /**
   * Non-null only with `stdin: 'pipe'`. Closing it delivers EOF (it does not kill); writing after the
   * process ended rejects with `ALEPH_PROCESS_EXITED`.
   */
  readonly stdin: WritableStream<Uint8Array> | null;
  /**
   * Resolves once the whole process tree has ended and the after-run checks are done, with the same
   * {@link SandboxOutput} as `execute()`: stdout/stderr buffered within the output budget, truncation
   * flags, `timedOut`, `exitCode`/`signal`, `details` (`killedBy: 'kill'` after {@link kill},
   * `'timeout'` after the timeout; `denials`). Rejects with `ALEPH_ABORTED` when the caller's signal
   * aborted it, or with the driver's error. Every call returns the same promise.
   */
  wait(): Promise<SandboxOutput>;
  /**
   * Kills the whole process tree: at once with `SIGKILL` (the default), or with `SIGTERM`/`SIGINT` sent
   * to every process of the tree first and `SIGKILL` after `graceMs` for what is left (on Windows the job
   * is always terminated). Idempotent; resolves once the tree has ended. `wait()` then resolves with
   * `details.killedBy: 'kill'`.
   */
  kill(signal?: KillSignal, options?: KillOptions): Promise<void>;
  /** True once the process tree has ended (`wait()` has settled). */
  readonly exited: boolean;
}

/** A {@link SandboxProcess} started with `stdin: 'pipe'`. */
export interface WritableSandboxProcess extends SandboxProcess {
  readonly stdin: WritableStream<Uint8Array>;
}

/**
 * Everything an agent framework needs, bound to one session id: commands (streamed or buffered) and
 * files, on the same pipeline as `execute()` (before-hooks, capabilities and approval, one audit record
 * per process and per file call).
 *
 * Closing a handle kills the processes it started (their `wait()` resolves with `killedBy: 'kill'`) and
 * refuses every later call with `ALEPH_SESSION_CLOSED`; the workspace and the session's grants stay, and
 * another handle for the same id keeps working. `WorkspaceSandbox.dispose()` closes every handle.
 *
 * @example
 * ```ts
 * const session = sandbox.session('chat-1')
 * const proc = await session.spawn({ program: 'npm', args: ['test'], capabilities: { spawnSubprocess: true } })
 * for await (const chunk of proc.stdout) send(chunk)
 * const { exitCode } = await proc.wait()
 * await session.files.writeFile('notes.md', `exit ${exitCode}\n`)
 * await session.close()
 * ```
 */
export interface SandboxSession {
  readonly sessionId: SessionId;
  /** The session workspace (realpath), created on first use. */
  workspace(): Promise<string>;
  /**
   * Runs steps 0-4 of the pipeline (before-hooks, session, cwd, capabilities and approval, profile), then
   * starts the command and resolves with its handle. A denial rejects exactly as `execute()` would.
   */
  spawn(command: PipedSpawnCommandInput, options?: SpawnOptions): Promise<WritableSandboxProcess>;
  spawn(command: SpawnCommandInput, options?: SpawnOptions): Promise<SandboxProcess>;
  /** The buffered form of {@link spawn}: resolves with the output once the command has ended. */
  execute(command: SandboxCommandInput, options?: ExecuteOptions): Promise<SandboxOutput>;
  /** The session's files (see {@link SandboxFiles}). */
  readonly files: SandboxFiles;
  /**
   * Takes back run `runId` of this session (see `Sandbox.undo`); a run of another session is
   * `ALEPH_RUN_UNKNOWN`. Optional, so that older implementations still compile.
   */
  undo?(runId: string, options?: UndoOptions): Promise<UndoResult>;
  /** This session's kept change sets, newest first (`limit` at most), or one run's (`runId`). Optional. */
  changes?(request?: { readonly runId?: string; readonly limit?: number }): Promise<readonly KeptRun[]>;
  /** True once {@link close} was called (or the sandbox disposed). */
  readonly closed: boolean;
  /** Kills this handle's running processes and refuses further calls (`ALEPH_SESSION_CLOSED`). Idempotent. */
  close(): Promise<void>;
}
