// AlephSandbox: a deepagents 1.14 BaseSandbox backend on one Aleph session. `execute` runs through the
// session API (policy, capabilities and approval, audit, the OS sandbox); ls/read/grep/glob/delete are
// deepagents' own, derived through `execute` (POSIX sh, at the baseline); upload/download go through the
// session's files. Commands of the `execute` tool may ask for more than the baseline
// (`commandCapabilities`); a person approves them through `interruptOn()` + `approvalMiddleware()`.
import { AsyncLocalStorage } from 'node:async_hooks';
import {
  type AdapterSession,
  type AdapterSessionOptions,
  type CapabilityRequest,
  openAdapterSession,
  type SessionId,
} from '@aleph/sandbox';
import { canonicalJson, InvalidInputError, type SandboxCapabilities } from '@aleph/sandbox-core';
import {
  BaseSandbox,
  type DeleteResult,
  type ExecuteResponse,
  type FileDownloadResponse,
  type FileUploadResponse,
  type GlobResult,
  type GrepResult,
  type LsResult,
  type ReadResult,
} from 'deepagents';
import type { InterruptOnConfig } from 'langchain';
import {
  type AlephInterruptOnOptions,
  ApprovalTracker,
  executeApprovalMiddleware,
  interruptOnExecute,
} from './approval.js';
import { executeIn } from './execute.js';
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
    const held = await openAdapterSession(options, ['commandCapabilities']);
    return new AlephSandbox(held, commandCapabilities);
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

  override ls(path: string): Promise<LsResult> {
    return this.#derived.run(true, () => super.ls(path));
  }

  override read(filePath: string, offset?: number, limit?: number): Promise<ReadResult> {
    return this.#derived.run(true, () => super.read(filePath, offset, limit));
  }

  override grep(
    pattern: string,
    path?: string,
    glob?: string | null,
    maxCount?: number | null,
  ): Promise<GrepResult> {
    return this.#derived.run(true, () => super.grep(pattern, path, glob, maxCount));
  }

  override glob(pattern: string, path?: string): Promise<GlobResult> {
    return this.#derived.run(true, () => super.glob(pattern, path));
  }

  override delete(filePath: string): Promise<DeleteResult> {
    return this.#derived.run(true, () => super.delete(filePath));
  }

  uploadFiles(files: Array<[string, Uint8Array]>): Promise<FileUploadResponse[]> {
    return uploadFiles(this.#held.session.files, files);
  }

  downloadFiles(paths: string[]): Promise<FileDownloadResponse[]> {
    return downloadFiles(this.#held.session.files, paths);
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

  /** Kills what still runs and releases the sandbox (proxies, sockets). Idempotent. */
  close(): Promise<void> {
    return this.#held.close();
  }
}
