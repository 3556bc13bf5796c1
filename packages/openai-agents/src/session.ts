// AlephSandboxSession: the SandboxSession the Agents SDK's capabilities use, on an Aleph session handle.
// Commands go through session.spawn() (policy, capabilities and approval, audit, the OS sandbox); files
// through session.files (resolved beneath the workspace on descriptors, never following a link out).
import {
  changesInSession,
  type KeptRun,
  type SandboxFiles,
  type UndoOptions,
  type UndoResult,
  undoInSession,
} from '@aleph/sandbox';
import type { SandboxCapabilities, SandboxCapabilitiesInput } from '@aleph/sandbox-core';
import type { Editor, ToolOutputImage } from '@openai/agents';
import {
  type ExposedPortEndpoint,
  type ListDirectoryArgs,
  Manifest,
  type MaterializeEntryArgs,
  normalizeExposedPort,
  type ReadFileArgs,
  recordExposedPortEndpoint,
  resolveSandboxArchiveLimits,
  type SandboxArchiveLimits,
  SandboxConfigurationError,
  type SandboxDirectoryEntry,
  type SandboxExecResult,
  type SandboxSession,
  SandboxUnsupportedFeatureError,
  type ViewImageArgs,
  validateSandboxArchiveLimits,
  type WorkspaceArchiveData,
  type WorkspaceArchiveOptions,
  type WriteStdinArgs,
} from '@openai/agents/sandbox';
import { type AlephExecArgs, Commands, needsApproval, requestedCapabilities } from './commands.js';
import { createFilesEditor } from './editor.js';
import { closedError, mapErrors } from './errors.js';
import { formatExecResponse } from './exec-format.js';
import { readImage } from './image.js';
import { archiveTarget, checkManifest, manifestTarget, protectedPathsOf } from './manifest-target.js';
import { materializeManifest } from './materialize.js';
import type { OpenedSandbox } from './open-sandbox.js';
import type { AlephSessionState } from './session-state.js';
import { hydrateArchive, persistArchive } from './workspace-archive.js';
import { WorkspacePaths } from './workspace-paths.js';

function unsupportedRunAs(runAs: string): SandboxUnsupportedFeatureError {
  return new SandboxUnsupportedFeatureError(
    `runAs ${JSON.stringify(runAs)} is not supported by the Aleph sandbox: every command and file call acts as the sandbox's own user; drop runAs from the agent`,
    { provider: 'aleph', feature: 'runAs' },
  );
}

/**
 * A sandbox session of {@link AlephSandboxClient}. The SDK's shell and filesystem capabilities use
 * `execCommand`, `writeStdin` and `createEditor`; the other methods serve the rest of the SDK and your
 * own code. Its `state` is the plain object the runner reads and rewrites.
 */
export class AlephSandboxSession implements SandboxSession<AlephSessionState> {
  state: AlephSessionState;
  readonly #opened: OpenedSandbox;
  readonly #commands: Commands;
  #paths: WorkspacePaths | undefined;
  #closed = false;
  #closing: Promise<void> | undefined;
  #archiveLimits: SandboxArchiveLimits | null | undefined;

  /** @internal Made by {@link AlephSandboxClient}. */
  constructor(state: AlephSessionState, opened: OpenedSandbox) {
    this.state = state;
    this.#opened = opened;
    this.#commands = new Commands(
      opened,
      () => this.state.environment,
      () => this.#workspacePaths(),
    );
  }

  /** The mapping of the manifest root (read from the state, which the runner may replace) to the workspace. */
  #workspacePaths(): WorkspacePaths {
    const root = this.state.manifest.root;
    if (this.#paths?.root !== root) this.#paths = new WorkspacePaths(root, this.#opened.workspace);
    return this.#paths;
  }

  #toFiles(p: string): string {
    return this.#workspacePaths().forFiles(p);
  }

  /** The workspace's real path (the manifest root names it for the agent). */
  get workspacePath(): string {
    return this.#opened.workspace;
  }

  /** The session's files, confined to its workspace and grants (the Aleph file API). */
  get files(): SandboxFiles {
    this.#assertOpen();
    return this.#opened.session.files;
  }

  /** What every command may do without approval. */
  get baselineCapabilities(): SandboxCapabilities {
    return this.#opened.baseline;
  }

  /** The Aleph session id commands and file calls are audited under. */
  get alephSessionId(): string {
    return this.#opened.sessionId;
  }

  #assertOpen(): void {
    if (this.#closed) throw closedError(this.#opened.sessionId);
  }

  /**
   * Runs a shell command (`<shell> -lc CMD`, `-c` without login) in the sandbox, waits up to `yieldTimeMs`
   * (default 10 s) and gives its output, or a `sessionId` to reach it with {@link writeStdin} while it
   * runs. A denial, a timeout or a kill is part of the result (an `[aleph]` line saying what and why),
   * never an exception.
   */
  async exec(args: AlephExecArgs): Promise<SandboxExecResult> {
    this.#assertOpen();
    return this.#commands.exec(args);
  }

  /** {@link exec} as the text the model reads (what the `exec_command` tool returns). */
  async execCommand(args: AlephExecArgs): Promise<string> {
    return formatExecResponse(await this.exec(args));
  }

  /** Writes to a running command's stdin (`\u0003` interrupts it, `\u0004` ends its input). */
  async writeStdin(args: WriteStdinArgs): Promise<string> {
    this.#assertOpen();
    return this.#commands.writeStdin(args);
  }

  /**
   * True: `write_stdin` reaches running commands, and a `tty: true` command runs on a terminal of the
   * sandbox's own (Linux, util-linux `script`): control characters written to it are signals by its line
   * discipline. Without `tty` (or where there is no terminal) commands get pipes, and Ctrl-C (`\u0003`)
   * is SIGINT to the command's process tree.
   */
  supportsPty(): boolean {
    return true;
  }

  /**
   * Where the host reaches `port` of the session's commands: `127.0.0.1:PORT`, for a port the client
   * publishes (`capabilities: { publishPorts: [PORT] }`). The command that holds it (the first one running
   * while no other of the session does) is reached there while it runs.
   *
   * @throws {SandboxConfigurationError} a port the session does not publish, naming the fix.
   */
  async resolveExposedPort(port: number): Promise<ExposedPortEndpoint> {
    this.#assertOpen();
    const exposed = normalizeExposedPort(port);
    const published = this.#opened.baseline.publishPorts ?? [];
    if (!published.includes(exposed)) {
      throw new SandboxConfigurationError(
        `port ${exposed} is not published by this Aleph session (it publishes ${published.length === 0 ? 'none' : published.join(', ')}); add it to the client's capabilities: { publishPorts: [${exposed}] }`,
        { provider: 'aleph', port: exposed, configuredPorts: [...published] },
      );
    }
    return recordExposedPortEndpoint(this.state, { host: '127.0.0.1', port: exposed, tls: false });
  }

  /** True when a command asking for `capabilities` needs approval (more than the baseline). */
  needsApproval(capabilities: SandboxCapabilitiesInput | undefined): boolean {
    return needsApproval(this.#opened, requestedCapabilities(this.#opened.baseline, capabilities));
  }

  /** The apply_patch editor: V4A diffs applied through the session's file API. */
  createEditor(runAs?: string): Editor {
    this.#assertOpen();
    if (runAs !== undefined && runAs.trim() !== '') throw unsupportedRunAs(runAs);
    return createFilesEditor(
      this.#opened.session.files,
      (p) => this.#toFiles(p),
      (text) => this.#workspacePaths().output(text),
    );
  }

  /** A file's bytes (at most `maxBytes` of them). */
  async readFile(args: ReadFileArgs): Promise<Uint8Array> {
    this.#assertOpen();
    const files = this.#opened.session.files;
    const max = args.maxBytes;
    const at = this.#toFiles(args.path);
    if (typeof max !== 'number') return mapErrors(() => files.readFile(at));
    return mapErrors(async () => {
      const stream = await files.readFileStream(at);
      const chunks: Uint8Array[] = [];
      let size = 0;
      const reader = stream.getReader();
      try {
        while (size < max) {
          const next = await reader.read();
          if (next.done) break;
          chunks.push(next.value);
          size += next.value.byteLength;
        }
      } finally {
        await reader.cancel().catch(() => {});
      }
      return new Uint8Array(Buffer.concat(chunks).subarray(0, Math.max(0, max)));
    });
  }

  /** A directory's entries (links not followed). */
  async listDir(args: ListDirectoryArgs): Promise<SandboxDirectoryEntry[]> {
    this.#assertOpen();
    const entries = await mapErrors(() => this.#opened.session.files.list(this.#toFiles(args.path)));
    const base = args.path.replace(/\/+$/, '');
    return entries.map((e) => ({
      name: e.name,
      path: base === '' || base === '.' ? e.name : `${base}/${e.name}`,
      type: e.type === 'directory' ? 'dir' : e.type === 'file' ? 'file' : 'other',
    }));
  }

  /** True when something (a link included) is at `path`. */
  async pathExists(path: string): Promise<boolean> {
    return (await this.#stat(path, false)) !== undefined;
  }

  /** True when `path` is a directory (a final link inside the workspace followed). */
  async directoryExists(path: string): Promise<boolean> {
    return (await this.#stat(path, true)) === 'directory';
  }

  async #stat(path: string, follow: boolean): Promise<string | undefined> {
    this.#assertOpen();
    try {
      return (await this.#opened.session.files.stat(this.#toFiles(path), { followSymlinks: follow })).type;
    } catch (error) {
      if ((error as { code?: string }).code === 'ALEPH_FILE_NOT_FOUND') return undefined;
      return mapErrors(() => Promise.reject(error));
    }
  }

  /** An image of the workspace for the model (PNG, JPEG, GIF, WebP; at most 10 MB). */
  async viewImage(args: ViewImageArgs): Promise<ToolOutputImage> {
    this.#assertOpen();
    if (args.runAs !== undefined && args.runAs.trim() !== '') throw unsupportedRunAs(args.runAs);
    return mapErrors(() => readImage(this.#opened.session.files, this.#toFiles(args.path), args.path));
  }

  /** Adds one manifest entry to the workspace (a provided session given an agent's manifest). */
  async materializeEntry(args: MaterializeEntryArgs): Promise<void> {
    await this.applyManifest(
      new Manifest({ entries: { [this.#relative(args.path)]: args.entry } }),
      args.runAs,
    );
  }

  /** Adds a manifest's entries and environment to the session (an additive delta). */
  async applyManifest(manifest: Manifest, runAs?: string): Promise<void> {
    this.#assertOpen();
    if (runAs !== undefined && runAs.trim() !== '') throw unsupportedRunAs(runAs);
    checkManifest(manifest);
    await materializeManifest(manifest, manifestTarget(this.#opened));
    this.state.environment = { ...this.state.environment, ...(await manifest.resolveEnvironment()) };
    const current = this.state.manifest;
    this.state.manifest = new Manifest({
      version: current.version,
      root: current.root,
      entries: { ...structuredClone(current.entries), ...structuredClone(manifest.entries) },
      environment: Object.fromEntries(
        [...Object.entries(current.environment), ...Object.entries(manifest.environment)].map(([k, v]) => [
          k,
          v.init(),
        ]),
      ),
    });
  }

  #relative(p: string): string {
    const mapped = this.#toFiles(p);
    return mapped === '.' ? '' : mapped;
  }

  /** The limits {@link hydrateWorkspace} and {@link persistWorkspace} keep (`null`: none; default: the SDK's). */
  setArchiveLimits(limits?: SandboxArchiveLimits | null): void {
    validateSandboxArchiveLimits(limits);
    this.#archiveLimits = limits;
  }

  /**
   * The workspace as a tar archive (directories and files with their modes; links, the manifest's
   * ephemeral paths and protected paths left out), read through the file API, within the archive limits.
   */
  async persistWorkspace(): Promise<Uint8Array> {
    this.#assertOpen();
    return persistArchive(
      this.#opened.session.files,
      this.state.manifest.ephemeralPersistencePaths(),
      protectedPathsOf(this.#opened),
      resolveSandboxArchiveLimits(this.#archiveLimits),
    );
  }

  /**
   * Restores a tar archive into the workspace through the file API: every member is checked first (the
   * limits, names, links leading out of the workspace, protected paths) and nothing is written unless all
   * pass. Members replace what has their name; nothing else is removed.
   */
  async hydrateWorkspace(data: WorkspaceArchiveData, options: WorkspaceArchiveOptions = {}): Promise<void> {
    this.#assertOpen();
    const limits = options.archiveLimits === undefined ? this.#archiveLimits : options.archiveLimits;
    validateSandboxArchiveLimits(limits);
    await hydrateArchive(archiveTarget(this.#opened), data, resolveSandboxArchiveLimits(limits));
  }

  /**
   * Takes back what one of this session's commands changed: `runId` is the run id its output names
   * (`[aleph] changes: … (run r…)`). Refused (`undone: false`, nothing touched, `conflicts` naming the
   * paths) when they changed since, unless `force`.
   */
  async undo(runId: string, options?: UndoOptions): Promise<UndoResult> {
    this.#assertOpen();
    return undoInSession(this.#opened.session, runId, options);
  }

  /** This session's kept change sets, newest first, or one run's (`{ runId }`). */
  async changes(request?: { readonly runId?: string; readonly limit?: number }): Promise<readonly KeptRun[]> {
    this.#assertOpen();
    return changesInSession(this.#opened.session, request);
  }

  /**
   * Kills every command it started and releases the sandbox; later calls fail with a lifecycle error.
   * The workspace stays (it is the session's, or your directory). Idempotent. The runner calls it when a
   * run that created or resumed the session ends (the session has no stop/shutdown/delete of its own).
   */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      this.#closed = true;
      try {
        await this.#commands.stopAll();
      } finally {
        await this.#opened.dispose();
      }
    })();
    return this.#closing;
  }
}
