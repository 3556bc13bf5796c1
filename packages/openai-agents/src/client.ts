// AlephSandboxClient: the SandboxClient a SandboxAgent run is given. create() opens an Aleph session (the
// user's directory or the session's own workspace), which the manifest root names, and writes the manifest's
// entries through the file API; serialize/deserialize/resume carry the session id across processes,
// re-bound to the resuming client's own configuration.
import { randomUUID } from 'node:crypto';
import { realpath } from 'node:fs/promises';
import {
  type Manifest,
  normalizeSandboxClientCreateArgs,
  type SandboxClient,
  type SandboxClientCreateArgs,
  type SandboxClientResumeOptions,
  SandboxConfigurationError,
} from '@openai/agents/sandbox';
import { checkManifest, manifestTarget } from './manifest-target.js';
import { materializeManifest } from './materialize.js';
import { type OpenedSandbox, openSandbox } from './open-sandbox.js';
import {
  type AlephSandboxClientOptions,
  mergeOptions,
  type ResolvedOptions,
  resolveOptions,
} from './options.js';
import { AlephSandboxSession } from './session.js';
import {
  type AlephSessionState,
  deserializeState,
  type SerializedAlephState,
  serializeState,
} from './session-state.js';
import { checkRoot } from './workspace-paths.js';

/**
 * A `SandboxClient` for `@openai/agents` 0.20 that runs every command of a `SandboxAgent` in the Aleph
 * OS sandbox (command policy, capabilities and approval, audit, bubblewrap/Landlock/seccomp on Linux) and
 * serves its file tools from the workspace without ever following a link out of it.
 *
 * @example
 * ```ts
 * const client = new AlephSandboxClient({ workspace: './project' })
 * const result = await run(agent, 'Run the tests', { sandbox: { client } })
 * ```
 */
export class AlephSandboxClient implements SandboxClient<AlephSandboxClientOptions, AlephSessionState> {
  /** Persisted in a RunState; a RunState resumes only with a client of the same backend. */
  readonly backendId = 'aleph';
  /** `new AlephSandboxClient()` works: every option has a default. */
  readonly supportsDefaultOptions = true;
  /** A session is resumable in another process: it is an Aleph session id and a directory. */
  readonly serializedSessionStateRequiresFreshCreation = false;
  readonly options: AlephSandboxClientOptions;

  /** @throws {SandboxConfigurationError} an invalid option (named, with its value and the fix). */
  constructor(options: AlephSandboxClientOptions = {}) {
    resolveOptions(options);
    this.options = options;
  }

  /**
   * Opens an Aleph session: its workspace (`options.workspace`, or the session's own under the config's
   * `workspace_root`) is what the manifest root names (`/workspace` unless the agent's manifest says
   * otherwise), and the manifest's entries are written into it.
   *
   * @throws {SandboxConfigurationError} invalid options or config, an entry that cannot be written.
   * @throws {SandboxUnsupportedFeatureError} manifest features the Aleph sandbox does not provide (users,
   *   groups, path grants, mounts); a git_repo entry that cannot be cloned is a SandboxConfigurationError.
   */
  async create(
    args?: SandboxClientCreateArgs<AlephSandboxClientOptions> | Manifest,
    manifestOptions?: AlephSandboxClientOptions,
  ): Promise<AlephSandboxSession> {
    const normalized = normalizeSandboxClientCreateArgs(args, manifestOptions);
    const manifest = normalized.manifest;
    const options = resolveOptions(mergeOptions(this.options, normalized.options));
    checkManifest(manifest);
    const sessionId = options.sessionId ?? `openai-agents-${randomUUID()}`;
    const opened = await openSandbox(options, sessionId);
    try {
      checkRoot(manifest.root, opened.workspace, opened.baseline.fsWrite.concat(opened.baseline.fsRead));
      await materializeManifest(manifest, manifestTarget(opened));
      const state: AlephSessionState = {
        manifest,
        environment: await manifest.resolveEnvironment(),
        alephSessionId: sessionId,
        userWorkspace: opened.userWorkspace ? opened.workspace : null,
        workspacePath: opened.workspace,
        workspaceReady: true,
      };
      const session = new AlephSandboxSession(state, opened);
      if (normalized.archiveLimits !== undefined) session.setArchiveLimits(normalized.archiveLimits);
      return session;
    } catch (error) {
      await opened.dispose();
      throw error;
    }
  }

  /** What a RunState keeps: the Aleph session id, the user's directory if any, the environment. */
  async serializeSessionState(state: AlephSessionState): Promise<SerializedAlephState> {
    return serializeState(state);
  }

  /**
   * Reads a session state back from a RunState, validating every field (it is untrusted input).
   *
   * @throws {SandboxConfigurationError} naming the field that is wrong.
   */
  async deserializeSessionState(state: Record<string, unknown>): Promise<AlephSessionState> {
    return deserializeState(state);
  }

  /**
   * Re-binds a session state to this client: the same Aleph session id, in the workspace this client's
   * own options and config give (the state cannot choose a directory), with this client's baseline and
   * approvals.
   *
   * @throws {SandboxConfigurationError} the state is of another directory or session id than this client's.
   */
  async resume(
    state: AlephSessionState,
    options: SandboxClientResumeOptions<AlephSandboxClientOptions> = {},
  ): Promise<AlephSandboxSession> {
    const resolved = resolveOptions(mergeOptions(this.options, options.clientOptions));
    await checkResumable(state, resolved);
    let opened: OpenedSandbox | undefined;
    try {
      opened = await openSandbox(resolved, state.alephSessionId);
      checkRoot(
        state.manifest.root,
        opened.workspace,
        opened.baseline.fsWrite.concat(opened.baseline.fsRead),
      );
      const resumed: AlephSessionState = {
        ...state,
        userWorkspace: opened.userWorkspace ? opened.workspace : null,
        workspacePath: opened.workspace,
        workspaceReady: true,
      };
      const session = new AlephSandboxSession(resumed, opened);
      if (options.archiveLimits !== undefined) session.setArchiveLimits(options.archiveLimits);
      return session;
    } catch (error) {
      await opened?.dispose();
      throw error;
    }
  }
}

async function checkResumable(state: AlephSessionState, options: ResolvedOptions): Promise<void> {
  const refuse = (field: string, message: string): never => {
    throw new SandboxConfigurationError(
      `cannot resume the Aleph session ${JSON.stringify(state.alephSessionId)}: ${message}`,
      {
        provider: 'aleph',
        field,
      },
    );
  };
  if (options.sessionId !== undefined && options.sessionId !== state.alephSessionId) {
    refuse(
      'sessionId',
      `this client's options.sessionId is ${JSON.stringify(options.sessionId)}; resume with a client of the same session id, or start a fresh run`,
    );
  }
  if (state.userWorkspace === null) {
    if (options.workspace !== undefined) {
      refuse(
        'workspace',
        `it used its own session workspace, and this client works in ${JSON.stringify(options.workspace)}; resume with a client without options.workspace`,
      );
    }
    return;
  }
  if (options.workspace === undefined) {
    refuse(
      'workspace',
      `it worked in ${JSON.stringify(state.userWorkspace)}; resume with a client whose options.workspace is that directory (a RunState never chooses one)`,
    );
  }
  const mine = await realpath(options.workspace as string).catch(() => options.workspace as string);
  if (mine !== state.userWorkspace) {
    refuse(
      'workspace',
      `it worked in ${JSON.stringify(state.userWorkspace)}, and this client works in ${JSON.stringify(mine)}; resume with a client of the same directory`,
    );
  }
}
