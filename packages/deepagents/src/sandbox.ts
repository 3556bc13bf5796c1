// AlephSandbox: a deepagents 1.14 BaseSandbox backend on one Aleph session. `execute` runs through the
// session API (policy, capabilities and approval, audit, the OS sandbox); the file tools
// (ls/read/grep/glob/write/edit/delete, upload/download) go through the session's files (file-tools.ts:
// never a command, so never rate limited, and a failure is an `error`), and only a path outside the
// workspace and its grants (a system file, the session's /tmp) is left to the sandbox: deepagents' own
// command for reads, a fixed script for write/edit (outside-files.ts), both derived operations that the
// session's rate limit skips. Commands of the `execute` tool may ask for more than the baseline
// (`commandCapabilities`); a person approves them through `interruptOn()` + `approvalMiddleware()`. deepagents' own files (large tool results, conversation history) stay in the
// agent's state (agent-files.ts).
import { AsyncLocalStorage } from 'node:async_hooks';
import {
  type AdapterSession,
  type AdapterSessionOptions,
  type CapabilityRequest,
  changesInSession,
  type KeptRun,
  openAdapterSession,
  type SessionId,
  type UndoOptions,
  type UndoResult,
  undoInSession,
} from '@aleph/sandbox';
import { canonicalJson, InvalidInputError, type SandboxCapabilities } from '@aleph/sandbox-core';
import {
  applyGrepMaxCount,
  BaseSandbox,
  type DeleteResult,
  type EditResult,
  type ExecuteResponse,
  type FileDownloadResponse,
  type FileUploadResponse,
  type GlobResult,
  type GrepResult,
  type LsResult,
  type ReadRawResult,
  type ReadResult,
  type WriteResult,
} from 'deepagents';
import type { InterruptOnConfig } from 'langchain';
import {
  AgentFiles,
  checkWorkspaceBesideAgentFiles,
  coversAgentFiles,
  isAgentFile,
  splitAgentFiles,
} from './agent-files.js';
import {
  type AlephInterruptOnOptions,
  ApprovalTracker,
  executeApprovalMiddleware,
  interruptOnExecute,
} from './approval.js';
import { DerivedCommandError, executeIn } from './execute.js';
import {
  deleteFile,
  editFile,
  type FilesAt,
  globFiles,
  grepFiles,
  lsFiles,
  readFromFiles,
  readRawFromFiles,
  writeToFiles,
} from './file-tools.js';
import { checkInitialFiles, type InitialFiles, writeInitialFiles } from './initial-files.js';
import { editInSandbox, writeInSandbox } from './outside-files.js';
import { downloadFiles, uploadFiles } from './transfer.js';

/** What the commands of the `execute` tool ask for beyond the baseline: fixed, or per command. */
export type CommandCapabilities = CapabilityRequest | ((command: string) => CapabilityRequest | undefined);

/**
 * Options of {@link AlephSandbox.create}: those of every Aleph adapter (`workspace`, `config`,
 * `capabilities`, `approvalRequester`, `sessionId`, `driver`; see `AdapterSessionOptions` in
 * `@aleph/sandbox`) and `commandCapabilities`.
 */
export interface AlephSandboxOptions extends AdapterSessionOptions {
  /**
   * What a command of the `execute` tool asks for beyond the baseline (hosts, paths), or a function of
   * the command saying so. Beyond the baseline, a person approves it (`interruptOn()`), else the
   * `approvalRequester` decides (default: denied). Default: nothing beyond the baseline.
   */
  readonly commandCapabilities?: CommandCapabilities;
  /**
   * Files the sandbox starts with (a path relative to the workspace, or absolute inside it → its content),
   * written through the session's files before `create` resolves. A file that cannot be written fails
   * `create` (`ALEPH_CONFIG_INVALID` naming it) and leaves none of them behind.
   */
  readonly initialFiles?: InitialFiles;
}

function checkCommandCapabilities(value: unknown): CommandCapabilities | undefined {
  if (value === undefined || typeof value === 'function') return value as CommandCapabilities | undefined;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new InvalidInputError(
      'ALEPH_CONFIG_INVALID',
      'options.commandCapabilities',
      value,
      'is neither capabilities nor a function of the command',
      'pass e.g. { network: { kind: "allowHosts", hosts: ["pypi.org"] } } or (command) => …',
    );
  }
  return value as CapabilityRequest;
}

/**
 * A deepagents sandbox backend whose commands and files go through Aleph: pass it as `backend` to
 * `createDeepAgent`. `id` is non-empty (deepagents then offers the `execute` tool).
 *
 * - `execute(command)` runs `/bin/sh -c command` in the workspace; the output is stdout then stderr, with
 *   notes for a timeout (exit 124) and for what the sandbox refused while it ran; a refusal by the
 *   command policy or the capability check is exit 126 with the reason; it never throws for those.
 * - `uploadFiles`/`downloadFiles` stay beneath the workspace (a link a command planted is not followed
 *   out); one result per path with `file_not_found`, `permission_denied`, `is_directory` or `invalid_path`.
 * - deepagents' own files (`/large_tool_results/…`, `/conversation_history/…`) are kept in the agent's
 *   state (deepagents' `StateBackend`, per thread), never on the host: the model gets deepagents' notice
 *   with a preview for a large result and reads it back with `read_file`. Outside an agent run they are an
 *   error (`permission_denied`).
 *
 * @example
 * ```ts
 * const sandbox = await AlephSandbox.create({ workspace: process.cwd() })
 * const agent = createDeepAgent({ model, backend: sandbox, checkpointer: new MemorySaver(),
 *   interruptOn: sandbox.interruptOn(), middleware: [sandbox.approvalMiddleware()] })
 * ```
 */
export class AlephSandbox extends BaseSandbox {
  /** `aleph:` and the session id. */
  readonly id: string;
  readonly sessionId: SessionId;
  /** The workspace (real path): where commands start and relative paths resolve. */
  readonly workspace: string;
  /** The sandbox in words, for the agent's system prompt. */
  readonly description: string;
  readonly #held: AdapterSession;
  readonly #commandCapabilities: CommandCapabilities | undefined;
  readonly #derived = new AsyncLocalStorage<true>();
  readonly #tracker = new ApprovalTracker();
  readonly #agentFiles = new AgentFiles();
  #running = true;

  get #files(): FilesAt {
    return { files: this.#held.session.files, workspace: this.#held.workspace };
  }

  private constructor(held: AdapterSession, commandCapabilities: CommandCapabilities | undefined) {
    super();
    this.#held = held;
    this.#commandCapabilities = commandCapabilities;
    this.sessionId = held.sessionId;
    this.id = `aleph:${typeof held.sessionId === 'string' ? held.sessionId : canonicalJson(held.sessionId)}`;
    this.workspace = held.workspace;
    this.description = held.description;
  }

  /**
   * Builds the sandbox and opens its session.
   *
   * @throws {InvalidInputError} `ALEPH_CONFIG_INVALID` naming the option, its value and the fix.
   * @throws {DriverError} `ALEPH_DRIVER_UNAVAILABLE` when no sandbox driver exists for this platform.
   */
  static async create(options: AlephSandboxOptions = {}): Promise<AlephSandbox> {
    const commandCapabilities = checkCommandCapabilities(
      (options as { commandCapabilities?: unknown } | undefined)?.commandCapabilities,
    );
    const initialFiles = checkInitialFiles((options as { initialFiles?: unknown } | undefined)?.initialFiles);
    const held = await openAdapterSession(options, ['commandCapabilities', 'initialFiles']);
    try {
      checkWorkspaceBesideAgentFiles(held.workspace);
      if (initialFiles !== undefined) await writeInitialFiles(held.session.files, initialFiles);
    } catch (error) {
      await held.close();
      throw error;
    }
    return new AlephSandbox(held, commandCapabilities);
  }

  /**
   * Takes back what one of this sandbox's commands changed: `runId` is the run id the `execute` result
   * names (`aleph-sandbox: changes: … (run r…)`). Refused (`undone: false`, nothing touched, `conflicts`
   * naming the paths) when they changed since, unless `force`.
   */
  undo(runId: string, options?: UndoOptions): Promise<UndoResult> {
    return undoInSession(this.#held.session, runId, options);
  }

  /** This sandbox's kept change sets, newest first, or one run's (`{ runId }`). */
  changes(request?: { readonly runId?: string; readonly limit?: number }): Promise<readonly KeptRun[]> {
    return changesInSession(this.#held.session, request);
  }

  /** What a command of the `execute` tool asks for: the baseline and `commandCapabilities`. */
  capabilitiesFor(command: string): SandboxCapabilities {
    const spec = this.#commandCapabilities;
    return this.#held.request((typeof spec === 'function' ? spec(command) : spec) ?? {});
  }

  /** Every way `command` asks for more than the baseline, in words; empty when it needs no approval. */
  elevationOf(command: string): string[] {
    return this.#held.elevation(this.capabilitiesFor(command));
  }

  async execute(command: string): Promise<ExecuteResponse> {
    const held = this.#held;
    if (this.#derived.getStore() === true) {
      return executeIn(held, { command, capabilities: held.baseline, stdoutOnly: true });
    }
    let capabilities: SandboxCapabilities;
    try {
      capabilities = this.capabilitiesFor(command);
    } catch (error) {
      return {
        output: `aleph-sandbox: commandCapabilities failed: ${String(error)}`,
        exitCode: 125,
        truncated: false,
      };
    }
    const run = () => executeIn(held, { command, capabilities, stdoutOnly: false });
    if (held.elevation(capabilities).length > 0 && this.#tracker.approves(command)) {
      return held.withApproval(capabilities, run);
    }
    return run();
  }

  // deepagents' own files (large tool results, conversation history) are kept in the agent's state
  // (agent-files.ts); everything else is the workspace's, through the sandbox.

  /**
   * Runs deepagents' own command for a derived file tool (a path outside the workspace and its grants) in
   * the sandbox; a refusal, timeout or kill of that command is the tool's `error`, never an empty result.
   */
  async #inSandbox<T extends { error?: string }>(call: () => Promise<T>): Promise<T> {
    try {
      return await this.#derived.run(true, call);
    } catch (error) {
      if (error instanceof DerivedCommandError) return { error: error.message } as T;
      throw error;
    }
  }

  override async ls(path: string): Promise<LsResult> {
    if (isAgentFile(path)) return this.#agentFiles.ls(path);
    const listed = (await lsFiles(this.#files, path)) ?? (await this.#inSandbox(() => super.ls(path)));
    if (listed.error !== undefined || !coversAgentFiles(path)) return listed;
    return { ...listed, files: [...(listed.files ?? []), ...(await this.#agentFiles.roots())] };
  }

  override async read(filePath: string, offset?: number, limit?: number): Promise<ReadResult> {
    if (isAgentFile(filePath)) return this.#agentFiles.read(filePath, offset, limit);
    return (
      (await readFromFiles(this.#files, filePath, offset, limit)) ??
      (await this.#inSandbox(() => super.read(filePath, offset, limit)))
    );
  }

  override readRaw(filePath: string): Promise<ReadRawResult> {
    if (isAgentFile(filePath)) return this.#agentFiles.readRaw(filePath);
    return readRawFromFiles(this.#files, filePath);
  }

  override async grep(
    pattern: string,
    path = '/',
    glob?: string | null,
    maxCount?: number | null,
  ): Promise<GrepResult> {
    if (isAgentFile(path)) return this.#agentFiles.grep(pattern, path, glob, maxCount);
    const found =
      (await grepFiles(this.#files, pattern, path, glob, maxCount)) ??
      (await this.#inSandbox(() => super.grep(pattern, path, glob, maxCount)));
    if (found.error !== undefined || !coversAgentFiles(path)) return found;
    const mine = await this.#agentFiles.grep(pattern, '/', glob, maxCount);
    const matches = [...(found.matches ?? []), ...(mine.matches ?? [])];
    return applyGrepMaxCount({ result: { ...found, matches }, maxCount });
  }

  override async glob(pattern: string, path = '/'): Promise<GlobResult> {
    if (isAgentFile(path)) return this.#agentFiles.glob(pattern, path);
    return (
      (await globFiles(this.#files, pattern, path)) ??
      (await this.#inSandbox(() => super.glob(pattern, path)))
    );
  }

  override async write(filePath: string, content: string): Promise<WriteResult> {
    if (isAgentFile(filePath)) return this.#agentFiles.write(filePath, content);
    return (
      (await writeToFiles(this.#files, filePath, content)) ??
      (await writeInSandbox(this.#held, filePath, content))
    );
  }

  override async edit(
    filePath: string,
    oldString: string,
    newString: string,
    replaceAll?: boolean,
  ): Promise<EditResult> {
    if (isAgentFile(filePath)) return this.#agentFiles.edit(filePath, oldString, newString, replaceAll);
    return (
      (await editFile(this.#files, filePath, oldString, newString, replaceAll)) ??
      (await editInSandbox(this.#held, filePath, oldString, newString, replaceAll))
    );
  }

  override async delete(filePath: string): Promise<DeleteResult> {
    if (isAgentFile(filePath)) return this.#agentFiles.delete(filePath);
    return (await deleteFile(this.#files, filePath)) ?? (await this.#inSandbox(() => super.delete(filePath)));
  }

  uploadFiles(files: Array<[string, Uint8Array]>): Promise<FileUploadResponse[]> {
    return splitAgentFiles(
      files,
      (entry) => (Array.isArray(entry) ? entry[0] : undefined),
      (mine) => this.#agentFiles.upload(mine),
      (rest) => uploadFiles(this.#held.session.files, rest),
    );
  }

  downloadFiles(paths: string[]): Promise<FileDownloadResponse[]> {
    return splitAgentFiles(
      paths,
      (path) => path,
      (mine) => this.#agentFiles.download(mine),
      (rest) => downloadFiles(this.#held.session.files, rest),
    );
  }

  /**
   * For `createDeepAgent({ interruptOn })`: the `execute` tool interrupts for a person when a command asks
   * for more than the baseline (or for every command with `everyCommand`), saying what it asks for. Use it
   * with {@link approvalMiddleware}, which lets an approved call have it; resume with
   * `new Command({ resume: { decisions: [{ type: 'approve' }] } })` (or `reject`).
   */
  interruptOn(options: AlephInterruptOnOptions = {}): { execute: InterruptOnConfig } {
    return { execute: interruptOnExecute(this.#tracker, (command) => this.elevationOf(command), options) };
  }

  /**
   * For `createDeepAgent({ middleware })`: an `execute` call a person approved through
   * {@link interruptOn} runs with what its command asks for, without asking the `approvalRequester`.
   */
  approvalMiddleware() {
    return executeApprovalMiddleware(this.#tracker);
  }

  /** Whether the sandbox is open: true from `create` until {@link close}. */
  get isRunning(): boolean {
    return this.#running;
  }

  /** Kills what still runs and releases the sandbox (proxies, sockets). Idempotent. */
  close(): Promise<void> {
    this.#running = false;
    return this.#held.close();
  }
}
