import type { SandboxCommandInput } from './command.js';
import type { SandboxOutput } from './output.js';
import type { OutputCallback } from './runner.js';

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
  /** Releases everything the sandbox holds (proxies, sockets, temp dirs). Idempotent. */
  dispose?(): Promise<void>;
}
