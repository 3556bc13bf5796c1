// The session handle (SandboxSession): spawn, execute and files bound to one session id, and close,
// which kills what the handle started and refuses every later call.
import type { ChangesRequest, KeptRun, UndoResult } from './changes.js';
import type { SandboxCommandInput } from './command.js';
import { AlephError } from './errors.js';
import type { FilesHost } from './files/session-files.js';
import { createSessionFiles } from './files/session-files.js';
import type { SandboxFiles } from './files/types.js';
import { createKillRequest } from './kill-request.js';
import type { SandboxOutput } from './output.js';
import type { RunRuntime } from './pipeline-run.js';
import type { ExecuteOptions } from './sandbox.js';
import type { Killable } from './sandbox-process.js';
import { canonicalJson, type SessionId, sessionKeyToFilename } from './session.js';
import type {
  PipedSpawnCommandInput,
  SandboxProcess,
  SandboxSession,
  SpawnCommandInput,
  SpawnOptions,
  WritableSandboxProcess,
} from './session-api.js';
import type { RunScope, UndoOptions } from './undo.js';

/** What a session handle needs of its `WorkspaceSandbox`. */
export interface SessionOwner {
  readonly files: Omit<FilesHost, 'assertOpen'>;
  /** Throws `ALEPH_DISPOSED` once the sandbox is disposed. */
  assertUsable(): void;
  /** Every running process of the sandbox (a dispose kills them). */
  readonly live: Set<Killable>;
  workspace(sessionId: SessionId): Promise<string>;
  /** A handle of `sessionId` closed (after its processes were killed). */
  handleClosed(sessionId: SessionId): Promise<void>;
  execute(input: unknown, runtime: RunRuntime): Promise<SandboxOutput>;
  /** `undo` of the sandbox, limited to `scope`'s runs. */
  undo(runId: string, options: UndoOptions, scope: RunScope): Promise<UndoResult>;
  /** `changes` of the sandbox, limited to `scope`'s runs. */
  changes(request: ChangesRequest, scope: RunScope): Promise<readonly KeptRun[]>;
  spawn(
    input: unknown,
    options: SpawnOptions,
    session: { id: SessionId; live: Set<Killable> },
  ): Promise<SandboxProcess>;
}

/**
 * A {@link SandboxSession} over `owner` for `sessionId`.
 *
 * @example
 * ```ts
 * const session = new SessionHandle(owner, 'chat-1')
 * ```
 */
export class SessionHandle implements SandboxSession {
  readonly sessionId: SessionId;
  readonly files: SandboxFiles;
  readonly #owner: SessionOwner;
  readonly #live = new Set<Killable>();
  #closed = false;
  #closing: Promise<void> | undefined;

  constructor(owner: SessionOwner, sessionId: SessionId) {
    canonicalJson(sessionId, 'sessionId');
    this.sessionId = sessionId;
    this.#owner = owner;
    this.files = createSessionFiles({ ...owner.files, assertOpen: () => this.#assertOpen() }, sessionId);
  }

  get closed(): boolean {
    try {
      this.#owner.assertUsable();
    } catch {
      return true;
    }
    return this.#closed;
  }

  /**
   * A handle its user closed says so (`ALEPH_SESSION_CLOSED`) even once its sandbox is disposed too (an
   * adapter's close() does both): the closing is what the caller did and what the contract names.
   */
  #assertOpen(): void {
    if (this.#closed) {
      let disposed = false;
      try {
        this.#owner.assertUsable();
      } catch {
        disposed = true;
      }
      const fix = disposed
        ? 'its sandbox was disposed too: build a new sandbox (or open a new adapter session) to go on'
        : 'get a new one with sandbox.session(id) to go on';
      throw new AlephError(
        'ALEPH_SESSION_CLOSED',
        `session ${canonicalJson(this.sessionId)}: this handle was closed; ${fix} (the workspace is still there)`,
        { details: { sessionId: this.sessionId } },
      );
    }
    this.#owner.assertUsable();
  }

  async workspace(): Promise<string> {
    this.#assertOpen();
    return this.#owner.workspace(this.sessionId);
  }

  spawn(command: PipedSpawnCommandInput, options?: SpawnOptions): Promise<WritableSandboxProcess>;
  spawn(command: SpawnCommandInput, options?: SpawnOptions): Promise<SandboxProcess>;
  async spawn(command: SpawnCommandInput, options: SpawnOptions = {}): Promise<SandboxProcess> {
    this.#assertOpen();
    return this.#owner.spawn(command, options, { id: this.sessionId, live: this.#live });
  }

  async execute(command: SandboxCommandInput, options: ExecuteOptions = {}): Promise<SandboxOutput> {
    this.#assertOpen();
    const killer = new AbortController();
    const entry: Killable = {
      kill: async () => {
        killer.abort(createKillRequest());
        await done.then(
          () => {},
          () => {},
        );
      },
    };
    this.#live.add(entry);
    this.#owner.live.add(entry);
    const done = this.#owner.execute(command, {
      ...options,
      kill: killer.signal,
      session: this.sessionId,
    });
    try {
      return await done;
    } finally {
      this.#live.delete(entry);
      this.#owner.live.delete(entry);
    }
  }

  /** Takes back run `runId` of this session (see `Sandbox.undo`). */
  async undo(runId: string, options: UndoOptions = {}): Promise<UndoResult> {
    this.#assertOpen();
    return this.#owner.undo(runId, options, {
      sessionKey: sessionKeyToFilename(this.sessionId),
      sessionId: this.sessionId,
    });
  }

  /** This session's kept change sets, newest first, or one run's. */
  async changes(
    request: { readonly runId?: string; readonly limit?: number } = {},
  ): Promise<readonly KeptRun[]> {
    this.#assertOpen();
    const workspace = await this.#owner.workspace(this.sessionId);
    return this.#owner.changes(
      { ...request, ...(request.runId === undefined ? { workspace } : {}) },
      { sessionKey: sessionKeyToFilename(this.sessionId) },
    );
  }

  close(): Promise<void> {
    this.#closing ??= (async () => {
      this.#closed = true;
      await Promise.all([...this.#live].map((p) => p.kill()));
      await this.#owner.handleClosed(this.sessionId);
    })();
    return this.#closing;
  }
}
