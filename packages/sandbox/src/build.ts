import type { Resolver } from '@aleph/proxy';
import {
  AlephError,
  ApprovalGate,
  type ApprovalRequester,
  type AuditSink,
  type ChangesRequest,
  createJsonlAuditSink,
  DriverError,
  type ExecuteOptions,
  type KeptRun,
  NoopSandbox,
  type OsSandboxDriver,
  type PipedSpawnCommandInput,
  type ProbeResult,
  RateLimitHook,
  type Sandbox,
  type SandboxBeforeHook,
  type SandboxCommandInput,
  type SandboxFiles,
  type SandboxOutput,
  type SandboxProcess,
  type SandboxSession,
  type SessionId,
  type SpawnCommandInput,
  type SpawnOptions,
  type UndoOptions,
  type UndoResult,
  WorkspaceSandbox,
  type WritableSandboxProcess,
} from '@aleph/sandbox-core';
import { denyAllApprovalRequester } from './approval.js';
import type { AlephConfig } from './config-shape.js';

/** Options of {@link buildSandbox}. */
export interface BuildSandboxOptions {
  /** Who approves elevations. Default: deny every one. */
  readonly approvalRequester?: ApprovalRequester;
  /** Use this driver instead of the platform's. */
  readonly driver?: OsSandboxDriver;
  /** Put a session's workspace here instead of under `workspaceRoot` (the CLI's `--workspace DIR`). */
  readonly workspaceFor?: (sessionId: SessionId) => string;
  /** DNS for the managed proxy (tests inject one). */
  readonly resolver?: Resolver;
  /** Override `process.platform` (tests). */
  readonly platform?: NodeJS.Platform;
  /**
   * Linux: the host cache of the preflight's verdict (`LinuxDriverOptions.hostCache`): `use` it (the CLI's
   * one-shot runs), `refresh` it (doctor), or `off` (default).
   */
  readonly hostCache?: 'use' | 'refresh' | 'off';
  /**
   * Linux: start launchers through a fork server (default true). A process that runs one command (the
   * CLI's `run`) gains nothing from starting one.
   */
  readonly forkServer?: boolean;
}

/**
 * The sandbox agent frameworks use: `execute`, the session API (`spawn`, `session`, `files`) plus
 * lifecycle and introspection.
 */
export interface AlephSandbox extends Sandbox {
  execute(command: SandboxCommandInput, options?: ExecuteOptions): Promise<SandboxOutput>;
  /** Starts a command and resolves with its handle once steps 0-4 passed (see `WorkspaceSandbox.spawn`). */
  spawn(command: PipedSpawnCommandInput, options?: SpawnOptions): Promise<WritableSandboxProcess>;
  spawn(command: SpawnCommandInput, options?: SpawnOptions): Promise<SandboxProcess>;
  /**
   * A handle bound to one session: spawn, execute, files, close (see `SandboxSession`). Without an id:
   * the enclosing `withSession()` id, else a new random one.
   */
  session(sessionId?: SessionId): SandboxSession;
  /** The files of a session, confined to its workspace and grants (see `SandboxFiles`). */
  files(sessionId: SessionId): SandboxFiles;
  /**
   * Takes back what run `runId` (`details.runId`) changed; refused with the conflicting paths when they
   * changed since, unless `force` (see `WorkspaceSandbox.undo`). Audited.
   */
  undo(runId: string, options?: UndoOptions): Promise<UndoResult>;
  /** The kept change sets: one run's (`{ runId }`) or a workspace's, newest first. */
  changes(request?: ChangesRequest): Promise<readonly KeptRun[]>;
  /** Releases the proxies, sockets and audit sink; using the sandbox afterwards is an error. */
  dispose(): Promise<void>;
  readonly config: AlephConfig;
  /** The driver in use (`undefined` when disabled). */
  readonly driver: OsSandboxDriver | undefined;
  /** Where a session's workspace lives. */
  workspacePath(sessionId: SessionId): string;
  /** Problems found while building (a custom policy rule that did not compile, …), already audited. */
  readonly warnings: readonly string[];
  probe(): Promise<ProbeResult | undefined>;
}

/** Loads the driver for `platform` lazily, so importing this package never touches other platforms' code. */
async function platformDriver(
  platform: NodeJS.Platform,
  config: AlephConfig,
  options: BuildSandboxOptions,
): Promise<OsSandboxDriver> {
  const resolver = options.resolver;
  if (platform === 'linux') {
    const { createLinuxDriver } = await import('@aleph/driver-linux');
    return createLinuxDriver({
      ...(options.hostCache === undefined ? {} : { hostCache: options.hostCache }),
      ...(options.forkServer === undefined ? {} : { forkServer: options.forkServer }),
      landlock: config.linux.landlock,
      protectedPaths: config.linux.protectedPaths,
      protectAllGit: config.linux.protectAllGit,
      maxPids: config.linux.maxPids,
      quarantineBudget: {
        runBytes: config.linux.quarantineRunMb * 1024 * 1024,
        sessionBytes: config.linux.quarantineSessionMb * 1024 * 1024,
      },
      ...(config.linux.sandboxUid === undefined ? {} : { sandboxUid: config.linux.sandboxUid }),
      sandboxUidRange: config.linux.sandboxUidRange,
      ...(config.linux.homeRoot === undefined ? {} : { homeRoot: config.linux.homeRoot }),
      allowLoaderEnv: config.linux.allowLoaderEnv,
      ...(config.audit.jsonlPath === undefined ? {} : { auditLogPath: config.audit.jsonlPath }),
      ...(config.linux.maxOpenFiles === undefined ? {} : { maxOpenFiles: config.linux.maxOpenFiles }),
      ...(config.linux.maxFileMb === undefined ? {} : { maxFileMb: config.linux.maxFileMb }),
      ...(config.linux.tmpfsSizeMb === undefined ? {} : { tmpfsSizeMb: config.linux.tmpfsSizeMb }),
      minimumTier: config.linux.minimumTier,
      changes: {
        enabled: config.changes.enabled,
        maxBytes: config.changes.maxBytes,
        maxFileBytes: config.changes.maxFileBytes,
        keepOnDispose: config.changes.keepOnDispose,
      },
      ...(config.linux.cpuQuotaPercent === undefined
        ? {}
        : { cpuQuotaPercent: config.linux.cpuQuotaPercent }),
      proxy: {
        deny: config.network.deny,
        egressPorts: config.network.egressPorts,
        ...(resolver === undefined ? {} : { resolver }),
        ...(config.network.parentProxy === undefined ? {} : { parent: config.network.parentProxy }),
      },
    });
  }
  if (platform === 'darwin') {
    const { createMacosDriver } = await import('@aleph/driver-macos');
    return createMacosDriver({
      protectedPaths: config.macos.protectedPaths,
      protectAllGit: config.macos.protectAllGit,
      collectViolations: config.macos.collectViolations,
      ...(config.audit.jsonlPath === undefined ? {} : { auditLogPath: config.audit.jsonlPath }),
      proxy: {
        deny: config.network.deny,
        ...(resolver === undefined ? {} : { resolver }),
        ...(config.network.parentProxy === undefined ? {} : { parent: config.network.parentProxy }),
      },
    });
  }
  if (platform === 'win32') {
    const { createWindowsDriver } = await import('@aleph/driver-windows');
    return createWindowsDriver({
      protectedPaths: config.windows.protectedPaths,
      requireAppContainer: config.windows.requireAppContainer,
      maxProcesses: config.windows.maxProcesses,
      ...(config.audit.jsonlPath === undefined ? {} : { auditLogPath: config.audit.jsonlPath }),
      platform,
    });
  }
  throw new DriverError(
    'ALEPH_DRIVER_UNAVAILABLE',
    platform,
    `no sandbox driver is available for ${platform} (there are drivers for Linux, macOS and Windows); pass options.driver, or run on one of those`,
  );
}

/**
 * Builds the sandbox for a config: the platform's driver (loaded lazily), the before-hooks (command
 * policy first, then the rate limit), the approval gate, the JSONL audit sink, and the workspace
 * pipeline. `enabled = false` gives a sandbox whose every `execute` fails fast.
 *
 * @example
 * ```ts
 * const sandbox = await buildSandbox(await loadConfig(), { approvalRequester: createTtyApprovalRequester() })
 * const out = await sandbox.execute({ sessionId: 'chat-1', program: 'ls', args: ['-la'] })
 * await sandbox.dispose()
 * ```
 * @throws {DriverError} `ALEPH_DRIVER_UNAVAILABLE` when no driver exists for this platform.
 */
export async function buildSandbox(
  config: AlephConfig,
  options: BuildSandboxOptions = {},
): Promise<AlephSandbox> {
  if (!config.enabled) {
    const noop = new NoopSandbox();
    let disposed = false;
    return {
      config,
      driver: undefined,
      warnings: [],
      async execute(command) {
        if (disposed)
          throw new AlephError(
            'ALEPH_DISPOSED',
            'this sandbox was disposed; build a new one to run more commands',
          );
        return noop.execute(command);
      },
      spawn: ((command: SpawnCommandInput) => noop.spawn(command)) as AlephSandbox['spawn'],
      session: (sessionId) => noop.session(sessionId),
      files: (sessionId) => noop.session(sessionId).files,
      undo: (runId) => noop.undo(runId),
      changes: () => noop.changes(),
      async dispose() {
        disposed = true;
      },
      workspacePath: () => config.workspaceRoot,
      probe: async () => undefined,
    };
  }
  const driver =
    options.driver ?? (await platformDriver(options.platform ?? process.platform, config, options));
  const warnings: string[] = [];
  const hooks: SandboxBeforeHook[] = [];
  if (config.commandPolicy.enabled) {
    const { createCommandPolicy, createCommandPolicyHook } = await import('@aleph/command-policy');
    const policy = createCommandPolicy({
      enabled: true,
      enforcement: config.commandPolicy.enforcement,
      useDefaultRules: config.commandPolicy.useDefaultRules,
      customRules: config.commandPolicy.customRules,
    });
    for (const e of policy.configErrors) warnings.push(`command policy rule ${e.rule} skipped: ${e.error}`);
    hooks.push(
      createCommandPolicyHook(policy, {
        platform: (options.platform ?? process.platform) === 'win32' ? 'windows' : 'posix',
      }),
    );
  }
  hooks.push(
    new RateLimitHook({
      capacity: config.rateLimit.capacity,
      refillPerSecond: config.rateLimit.refillPerSecond,
    }),
  );
  const sink: AuditSink | undefined =
    config.audit.jsonlPath === undefined ? undefined : createJsonlAuditSink({ path: config.audit.jsonlPath });
  const pipeline = new WorkspaceSandbox({
    driver,
    workspaceRoot: config.workspaceRoot,
    baseline: config.baseline,
    approvalGate: new ApprovalGate({
      requester: options.approvalRequester ?? denyAllApprovalRequester,
      timeoutMs: config.approval.timeoutSeconds * 1000,
    }),
    hooks,
    defaultTimeoutMs: config.defaultTimeoutSeconds * 1000,
    maxOutputBytes: config.maxOutputBytes,
    ...(options.workspaceFor === undefined ? {} : { workspaceFor: options.workspaceFor }),
  });
  let disposing: Promise<void> | undefined;
  return {
    config,
    driver,
    warnings,
    execute: (command, executeOptions) => pipeline.execute(command, executeOptions),
    spawn: ((command: SpawnCommandInput, spawnOptions?: SpawnOptions) =>
      pipeline.spawn(command, spawnOptions)) as AlephSandbox['spawn'],
    session: (sessionId) => pipeline.session(sessionId),
    files: (sessionId) => pipeline.files(sessionId),
    undo: (runId, undoOptions) => pipeline.undo(runId, undoOptions),
    changes: (request) => pipeline.changes(request),
    dispose() {
      disposing ??= (async () => {
        await pipeline.dispose();
        await sink?.close();
      })();
      return disposing;
    },
    workspacePath: (sessionId) => pipeline.workspacePath(sessionId),
    probe: () => driver.probe(),
  };
}
