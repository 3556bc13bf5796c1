// MockSandbox: records every command (execute and spawn) and answers with canned output; its sessions
// keep their files in memory. For testing code that uses a Sandbox (tools, adapters), with no driver.
import {
  type ChangesRequest,
  type KeptRun,
  newRunId,
  type UndoRequest,
  type UndoResult,
} from '../changes.js';
import { parseSandboxCommand, type SandboxCommand, type SandboxCommandInput } from '../command.js';
import { currentSession } from '../context.js';
import type { DriverRunRequest } from '../driver.js';
import { AlephError } from '../errors.js';
import { createSandboxOutput, type SandboxOutput } from '../output.js';
import type { ExecuteOptions, Sandbox } from '../sandbox.js';
import { type Killable, ProcessHandle } from '../sandbox-process.js';
import { canonicalJson, type SessionId, sessionKeyToFilename } from '../session.js';
import type {
  PipedSpawnCommandInput,
  SandboxProcess,
  SandboxSession,
  SpawnCommandInput,
  SpawnOptions,
  WritableSandboxProcess,
} from '../session-api.js';
import { type UndoOptions, undoRun, unknownRunError } from '../undo.js';
import { createFakeDriver, type FakeOutput } from './fake-driver.js';
import { MemoryFiles } from './memory-files.js';

function requestOf(command: SandboxCommand, runId: string): DriverRunRequest {
  return {
    runId,
    sessionId: command.sessionId,
    workspace: '',
    program: command.program,
    args: command.args,
    env: command.env,
    ...(command.stdin === undefined ? {} : { stdin: command.stdin }),
    cwd: command.cwd ?? '',
    capabilities: command.capabilities,
    profile: { driver: 'mock', summary: [] },
    timeoutMs: command.timeout ?? 60_000,
    maxOutputBytes: 1024 * 1024,
  };
}

/** How a {@link MockSandbox} answers an undo of one of its runs. */
export type MockUndo = (request: UndoRequest) => UndoResult | Promise<UndoResult>;

/**
 * Records every command and returns canned output, for testing exec-class tools (the spec's
 * `MockSandbox`). `spawn()` streams the canned output (and, with `stdin: 'pipe'`, reads stdin to its end
 * first, echoing it when `echoStdin` is set); `session(id)` gives handles whose files live in memory.
 *
 * @example
 * ```ts
 * const sandbox = new MockSandbox({ stdout: new TextEncoder().encode('hi') })
 * await bashExec(sandbox, 'echo hi')
 * expect(sandbox.commands[0].program).toBe('bash')
 * ```
 */
export class MockSandbox implements Sandbox {
  readonly commands: SandboxCommand[] = [];
  /** The in-memory files of each session, by `sessionKeyToFilename(id)`. */
  readonly sessionFiles = new Map<string, MemoryFiles>();
  /** The run id of each recorded command (`details.runId` of its output), in order. */
  readonly runIds: string[] = [];
  /** Every undo asked of the mock, in order. */
  readonly undoRequests: UndoRequest[] = [];
  readonly #output: FakeOutput;
  readonly #driver: ReturnType<typeof createFakeDriver>;
  readonly #undo: MockUndo | undefined;

  /**
   * `options.undo` answers `undo(runId)` for a run id the mock gave out (another id is
   * `ALEPH_RUN_UNKNOWN`); without it undo is `ALEPH_UNDO_UNAVAILABLE`, as on a driver that records nothing.
   */
  constructor(
    output: FakeOutput = {},
    options: { readonly echoStdin?: boolean; readonly undo?: MockUndo } = {},
  ) {
    this.#output = output;
    this.#undo = options.undo;
    this.#driver = createFakeDriver({
      output,
      keepRequests: false,
      files: false,
      ...(options.echoStdin === undefined ? {} : { echoStdin: options.echoStdin }),
    });
  }

  async execute(input: SandboxCommandInput, _options?: ExecuteOptions): Promise<SandboxOutput> {
    const command = parseSandboxCommand(input, currentSession());
    this.commands.push(command);
    const runId = newRunId();
    this.runIds.push(runId);
    const spec = this.#output;
    const fields = typeof spec === 'function' ? await spec(requestOf(command, runId)) : spec;
    return createSandboxOutput({ ...fields, details: { ...fields.details, runId } });
  }

  /** Records the request and answers with `options.undo` (see the constructor). */
  async undo(runId: string, options: UndoOptions = {}): Promise<UndoResult> {
    const answer = this.#undo;
    const known = this.runIds;
    const requests = this.undoRequests;
    const driver = {
      ...this.#driver,
      name: 'mock',
      ...(answer === undefined
        ? {}
        : {
            async undo(request: UndoRequest): Promise<UndoResult> {
              requests.push(request);
              if (!known.includes(request.runId)) throw unknownRunError(request.runId);
              return answer(request);
            },
          }),
    };
    return undoRun(driver, runId, options);
  }

  /** No change sets are kept by the mock: `[]` for a workspace, `ALEPH_RUN_UNKNOWN` for a run. */
  async changes(request: ChangesRequest = {}): Promise<readonly KeptRun[]> {
    if (request.runId !== undefined) throw unknownRunError(request.runId);
    return [];
  }

  spawn(command: PipedSpawnCommandInput, options?: SpawnOptions): Promise<WritableSandboxProcess>;
  spawn(command: SpawnCommandInput, options?: SpawnOptions): Promise<SandboxProcess>;
  async spawn(input: SpawnCommandInput, options: SpawnOptions = {}): Promise<SandboxProcess> {
    const piped = input.stdin === 'pipe';
    const { stdin: _stdin, ...rest } = input;
    const command = parseSandboxCommand(piped ? rest : input, currentSession());
    this.commands.push(command);
    const runId = newRunId();
    this.runIds.push(runId);
    const handle = new ProcessHandle(command.sessionId, piped);
    const signal =
      options.signal === undefined ? handle.killSignal : AbortSignal.any([options.signal, handle.killSignal]);
    const result = this.#driver
      .run({
        ...requestOf(command, runId),
        ...(handle.channel === undefined ? {} : { stdin: handle.channel }),
        signal,
        onStdout: handle.out.push,
        onStderr: handle.err.push,
      })
      .then((out) => {
        if (options.signal?.aborted) {
          throw new AlephError('ALEPH_ABORTED', 'the command was aborted by its AbortSignal', {
            cause: options.signal.reason,
          });
        }
        return createSandboxOutput({ ...out, details: { ...out.details, runId } });
      });
    handle.start(result, () => {});
    return handle;
  }

  /** A session handle: commands recorded with its id, files in memory (shared by handles of one id). */
  session(sessionId: SessionId = currentSession() ?? 'mock-session'): SandboxSession {
    const key = sessionKeyToFilename(sessionId);
    let files = this.sessionFiles.get(key);
    if (files === undefined) {
      files = new MemoryFiles(`/mock/workspaces/${key}`);
      this.sessionFiles.set(key, files);
    }
    return new MockSession(this, sessionId, files);
  }
}

class MockSession implements SandboxSession {
  readonly #live = new Set<Killable>();
  #closed = false;

  constructor(
    readonly mock: MockSandbox,
    readonly sessionId: SessionId,
    readonly files: MemoryFiles,
  ) {}

  get closed(): boolean {
    return this.#closed;
  }

  #open(): void {
    if (this.#closed) {
      throw new AlephError(
        'ALEPH_SESSION_CLOSED',
        `session ${canonicalJson(this.sessionId)}: this handle was closed`,
      );
    }
  }

  async workspace(): Promise<string> {
    this.#open();
    return this.files.root;
  }

  spawn(command: PipedSpawnCommandInput, options?: SpawnOptions): Promise<WritableSandboxProcess>;
  spawn(command: SpawnCommandInput, options?: SpawnOptions): Promise<SandboxProcess>;
  async spawn(command: SpawnCommandInput, options?: SpawnOptions): Promise<SandboxProcess> {
    this.#open();
    const proc = await this.mock.spawn({ ...command, sessionId: this.sessionId }, options);
    this.#live.add(proc);
    void proc.wait().then(
      () => this.#live.delete(proc),
      () => this.#live.delete(proc),
    );
    return proc;
  }

  async execute(command: SandboxCommandInput, options?: ExecuteOptions): Promise<SandboxOutput> {
    this.#open();
    return this.mock.execute({ ...command, sessionId: this.sessionId }, options);
  }

  async undo(runId: string, options?: UndoOptions): Promise<UndoResult> {
    this.#open();
    return this.mock.undo(runId, options);
  }

  async changes(
    request: { readonly runId?: string; readonly limit?: number } = {},
  ): Promise<readonly KeptRun[]> {
    this.#open();
    return this.mock.changes(request);
  }

  async close(): Promise<void> {
    this.#closed = true;
    await Promise.all([...this.#live].map((p) => p.kill()));
  }
}
