// createAlephSandboxSession: an AI SDK 7 Experimental_SandboxSession whose commands (process.ts) and
// files (files.ts) go through one Aleph session, so the command policy, capabilities and approval, the
// audit record and the OS sandbox apply to every call; plus close().
import type {
  Experimental_SandboxRunOptions as AiRunOptions,
  Experimental_SandboxProcess as AiSandboxProcess,
  Experimental_SandboxSession as AiSandboxSession,
  Experimental_SandboxSpawnOptions as AiSpawnOptions,
  Experimental_SandboxSpawnOptionsWithoutStdin as AiSpawnOptionsWithoutStdin,
  Experimental_SandboxSpawnOptionsWithStdin as AiSpawnOptionsWithStdin,
  Experimental_WritableSandboxProcess as AiWritableProcess,
} from '@ai-sdk/provider-utils';
import {
  type AdapterSessionOptions,
  AlephError,
  changesInSession,
  type KeptRun,
  openAdapterSession,
  type SessionId,
  type UndoOptions,
  type UndoResult,
  undoInSession,
} from '@aleph/sandbox';
import { fileMembers } from './files.js';
import { register } from './internal/registry.js';
import { runCommand, spawnCommand } from './process.js';

/**
 * Options of {@link createAlephSandboxSession}: those of every Aleph adapter (`workspace`, `config`,
 * `capabilities`, `approvalRequester`, `sessionId`, `driver`; see `AdapterSessionOptions` in
 * `@aleph/sandbox`).
 */
export type AlephSandboxSessionOptions = AdapterSessionOptions;

/** An AI SDK sandbox session backed by Aleph, with its session id, workspace and `close()`. */
export interface AlephSandboxSession extends AiSandboxSession {
  readonly sessionId: SessionId;
  /** The workspace directory (real path): where commands start and relative paths resolve. */
  readonly workspace: string;
  /**
   * Takes back what one of this session's commands changed (its run id: the shell tool's `runId`, or the
   * `aleph-sandbox: changes: … (run r…)` line of its stderr). Refused (`undone: false`, nothing touched,
   * `conflicts` naming the paths) when they changed since, unless `force`.
   */
  undo(runId: string, options?: UndoOptions): Promise<UndoResult>;
  /** This session's kept change sets, newest first, or one run's (`{ runId }`). */
  changes(request?: { readonly runId?: string; readonly limit?: number }): Promise<readonly KeptRun[]>;
  /** Kills what the session still runs and releases the sandbox (proxies, sockets). Idempotent. */
  close(): Promise<void>;
}

/**
 * Opens an Aleph sandbox session for the AI SDK: pass it as `experimental_sandbox` to `generateText`,
 * `streamText` or a `ToolLoopAgent`, where tools read it from their `experimental_sandbox` option (Aleph's
 * {@link createAlephShellTool}, the Anthropic `bash` tools' default executor, your own).
 *
 * - `run`/`spawn` run the command with `/bin/sh -c` in the workspace with the session's baseline
 *   capabilities; `workingDirectory` and relative paths resolve against the workspace; `env` goes over
 *   the sandbox's scrubbed environment. A non-zero exit, a timeout (exit 124) or a refusal by the
 *   command policy or the capability check (exit 126, the reason on stderr) are results.
 * - Files never leave the workspace (and the grants): a link a command planted is not followed out.
 *   Not found is `null` (`false` for `deleteFile`); a directory where a file is expected, a file where a
 *   directory is expected, a write through a final link, a path outside reject with a `FileAccessError`.
 *
 * @example
 * ```ts
 * const session = await createAlephSandboxSession({ workspace: process.cwd() })
 * const { text } = await generateText({ model, tools: { shell: createAlephShellTool() }, experimental_sandbox: session, stopWhen: stepCountIs(10), prompt })
 * await session.close()
 * ```
 * @throws {InvalidInputError} `ALEPH_CONFIG_INVALID` naming the option, its value and the fix.
 * @throws {DriverError} `ALEPH_DRIVER_UNAVAILABLE` when no sandbox driver exists for this platform.
 */
export async function createAlephSandboxSession(
  options?: AlephSandboxSessionOptions,
): Promise<AlephSandboxSession> {
  const held = await openAdapterSession(options);
  let closed = false;
  const open =
    <A extends unknown[], R>(fn: (...args: A) => Promise<R>) =>
    async (...args: A): Promise<R> => {
      if (closed) throw closedError(held.sessionId);
      return fn(...args);
    };
  function spawn(o: AiSpawnOptionsWithStdin): Promise<AiWritableProcess>;
  function spawn(o: AiSpawnOptionsWithoutStdin): Promise<AiSandboxProcess>;
  function spawn(o: AiSpawnOptions): Promise<AiSandboxProcess | AiWritableProcess>;
  async function spawn(o: AiSpawnOptions): Promise<AiSandboxProcess | AiWritableProcess> {
    if (closed) throw closedError(held.sessionId);
    return spawnCommand(held, o);
  }
  const files = fileMembers(held);
  const session: AlephSandboxSession = {
    description: held.description,
    sessionId: held.sessionId,
    workspace: held.workspace,
    ...(Object.fromEntries(
      Object.entries(files).map(([name, fn]) => [name, open(fn as (...args: unknown[]) => Promise<unknown>)]),
    ) as typeof files),
    spawn,
    run: open(async (o: AiRunOptions) => (await runCommand(held, o)).result),
    undo: open((runId: string, o?: UndoOptions) => undoInSession(held.session, runId, o)),
    changes: open((request?: { runId?: string; limit?: number }) => changesInSession(held.session, request)),
    close: () => {
      closed = true;
      return held.close();
    },
  };
  register(session, held);
  return session;
}

/** What every call of a closed session rejects with: the session is gone with its sandbox. */
function closedError(sessionId: SessionId): AlephError {
  return new AlephError(
    'ALEPH_SESSION_CLOSED',
    `session ${JSON.stringify(sessionId)}: this session was closed (its sandbox released); call createAlephSandboxSession(options) for a new one to go on (the workspace is still there)`,
    { details: { sessionId } },
  );
}
