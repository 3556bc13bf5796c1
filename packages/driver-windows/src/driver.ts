import { randomBytes } from 'node:crypto';
import { lookup } from 'node:dns/promises';
import { closeSync, existsSync, mkdirSync, openSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  createSandboxOutput,
  type DriverCapabilityId,
  DriverError,
  type DriverRunRequest,
  defaultVaultPaths,
  defineDriver,
  InvalidInputError,
  LOADER_ENV_PATTERNS,
  type OsSandboxDriver,
  type ProfileContext,
  refuseLoaderEnv,
  type SandboxCapabilities,
  type SandboxOutput,
} from '@aleph/sandbox-core';
import { buildCommandLine } from './cmdline.js';
import { createWindowsFiles } from './files.js';
import { LaunchError, runInJob } from './launch.js';
import {
  DEFAULT_WINDOWS_PROTECTED_PATHS,
  explainAllowHosts,
  type HostResolver,
  planWindowsProfile,
  type Tier,
  WINDOWS_HOME_PROTECTED_PATHS,
  type WindowsProfile,
  windowsHomes,
} from './plan.js';
import { probeWindows, type WindowsProbe } from './probe.js';
import { openStdio } from './stdio.js';
import type { Win32 } from './win32.js';

/** What the Windows driver can enforce (tier 1; `details.notEnforced` says what a lower tier could not). */
export const WINDOWS_CAPABILITIES: readonly DriverCapabilityId[] = [
  'exec',
  'exec.stdin-stream',
  'fs.confine',
  'fs.read',
  'fs.write',
  'fs.protected-paths',
  'net.none',
  'net.all',
  'proc.deny-spawn',
  'limit.memory',
  'limit.pids',
];

/** Host variables a command sees by default (names compared without regard to case, as Windows does). */
export const WINDOWS_ENV_ALLOWLIST = [
  'PATH',
  'PATHEXT',
  'SYSTEMROOT',
  'SYSTEMDRIVE',
  'WINDIR',
  'COMSPEC',
  'NUMBER_OF_PROCESSORS',
  'PROCESSOR_ARCHITECTURE',
  'OS',
  'LANG',
  'TERM',
  'TZ',
  'NO_COLOR',
  'FORCE_COLOR',
] as const;

/** Options of `createWindowsDriver`. */
export interface WindowsDriverOptions {
  /** Protected sub-paths of writable roots. Default `.git`, `.aleph`, `.codex`, `.agents`. */
  readonly protectedPaths?: readonly string[];
  /**
   * Kept read-only, and impossible to create, in every home directory a writable root holds
   * (`%USERPROFILE%`, `C:\Users\*`, realpath'd). Default {@link WINDOWS_HOME_PROTECTED_PATHS}.
   */
  readonly homeProtectedPaths?: readonly string[];
  /** Never readable or writable, whatever is granted. Default `~/.aleph/data`, `~/.aleph/.shared_token`. */
  readonly vaultPaths?: readonly string[];
  /** The audit JSONL file: never readable or writable, whatever is granted. Default none. */
  readonly auditLogPath?: string;
  /**
   * The user's `~/.aleph` (config, compile cache, workspaces), realpath'd: never writable, whatever is
   * granted; the session's own workspace inside it keeps its grant. Default `~/.aleph`.
   */
  readonly alephDir?: string;
  /** The home directories the home list may apply in. Default {@link windowsHomes}() (tests inject). */
  readonly homes?: readonly string[];
  /** Refuse to run below tier 1 (AppContainer) instead of degrading. Default false (the spec's soft-degrade). */
  readonly requireAppContainer?: boolean;
  /** JobObject process limit when subprocesses are allowed. Default 200. */
  readonly maxProcesses?: number;
  /** Host environment variables passed through. Default {@link WINDOWS_ENV_ALLOWLIST}. */
  readonly envAllowlist?: readonly string[];
  /**
   * Loader variables a command's `env` may set (`LD_*`, the .NET profiler and startup-hook variables of
   * `LOADER_ENV_PATTERNS.windows`). Default none: any other is refused with `ALEPH_INVALID_COMMAND`.
   * Names are compared without regard to case.
   */
  readonly allowLoaderEnv?: readonly string[];
  /** Resolves names for the `allowHosts` refusal message. Default: the system resolver. */
  readonly resolver?: HostResolver;
  /** A Win32 implementation instead of the ffi-rs binding (tests use a fake). */
  readonly win32?: Win32;
  /** Override `process.platform` (tests). */
  readonly platform?: NodeJS.Platform;
}

/** The Windows driver: `OsSandboxDriver` plus its probe details. */
export interface WindowsDriver extends OsSandboxDriver {
  readonly name: 'windows';
  probe(): Promise<WindowsProbe>;
  profileFor(caps: SandboxCapabilities, cwd: string, context: ProfileContext): Promise<WindowsProfile>;
}

/** What each tier leaves unenforced, for the output and the audit record. */
function notEnforced(tier: Tier, profile: WindowsProfile): string[] {
  if (tier === 'appcontainer') return [];
  const out = [
    'fs.confine: reads are not confined below the AppContainer tier (the vault and the audit log included)',
  ];
  if (profile.network === 'none') out.push('net.none: the network is open below the AppContainer tier');
  if (tier === 'host') out.push('fs.write and fs.protected-paths: the host token writes where the user can');
  return out;
}

function pickEnvIgnoringCase(patterns: readonly string[]): Record<string, string> {
  const wanted = new Set(patterns.map((p) => p.toUpperCase()));
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env))
    if (v !== undefined && wanted.has(k.toUpperCase())) out[k] = v;
  return out;
}

/**
 * Creates the Windows driver: each execution runs in the strongest tier that can be set up — a
 * per-execution AppContainer (capability SIDs from the network policy, ACL grants on exactly what is
 * granted, DENY ACEs on protected paths), else a restricted low-integrity token, else the host token —
 * always suspended into a JobObject (process count, memory, kill on close, UI restrictions) first.
 * Output details say which tier ran, why stronger ones did not, and what went unenforced.
 *
 * @example
 * ```ts
 * const sandbox = new WorkspaceSandbox({ driver: createWindowsDriver(), workspaceRoot })
 * const out = await sandbox.execute({ sessionId: 's1', program: 'cmd.exe', args: ['/d', '/c', 'dir'] })
 * ```
 */
export function createWindowsDriver(options: WindowsDriverOptions = {}): WindowsDriver {
  const platform = options.platform ?? process.platform;
  const protectedPaths = options.protectedPaths ?? DEFAULT_WINDOWS_PROTECTED_PATHS;
  const requireAppContainer = options.requireAppContainer ?? false;
  const maxProcesses = options.maxProcesses ?? 200;
  const envAllowlist = options.envAllowlist ?? WINDOWS_ENV_ALLOWLIST;
  const allowLoaderEnv = options.allowLoaderEnv ?? [];
  const homeProtectedPaths = options.homeProtectedPaths ?? WINDOWS_HOME_PROTECTED_PATHS;
  const vaultPaths = options.vaultPaths ?? defaultVaultPaths(os.homedir());
  const alephDir = options.alephDir ?? path.join(os.homedir(), '.aleph');
  const resolver: HostResolver =
    options.resolver ?? (async (name) => (await lookup(name, { all: true })).map((a) => a.address));
  let binding: Promise<Win32> | undefined;
  const loadWin32 = (): Promise<Win32> => {
    binding ??=
      options.win32 !== undefined
        ? Promise.resolve(options.win32)
        : import('./binding.js').then(({ loadWin32: load }) => load());
    return binding;
  };
  let probed: Promise<WindowsProbe> | undefined;
  let disposed = false;
  const probe = () => {
    probed ??= probeWindows({ platform, loadWin32, requireAppContainer });
    return probed;
  };

  const driver: WindowsDriver = defineDriver({
    name: 'windows' as const,
    capabilities: WINDOWS_CAPABILITIES,
    probe,
    files: () => createWindowsFiles(),

    async explainUnsupported(caps: SandboxCapabilities): Promise<string | undefined> {
      if (caps.network.kind !== 'allowHosts') return undefined;
      return explainAllowHosts(caps.network.hosts, resolver);
    },

    async profileFor(
      caps: SandboxCapabilities,
      cwd: string,
      context: ProfileContext,
    ): Promise<WindowsProfile> {
      const p = await probe();
      const tiers: Tier[] =
        p.tiers.length > 0
          ? [...p.tiers]
          : requireAppContainer
            ? ['appcontainer']
            : ['appcontainer', 'restricted', 'host'];
      return planWindowsProfile(caps, cwd, context.workspace, {
        protectedPaths,
        maxProcesses,
        tiers,
        homes: options.homes ?? windowsHomes(),
        homeProtectedPaths,
        alephDir,
        vaultPaths,
        auditLogPath: options.auditLogPath,
      });
    },

    async run(request: DriverRunRequest): Promise<SandboxOutput> {
      if (disposed)
        throw new DriverError('ALEPH_DRIVER_FAILED', 'windows', 'the Windows driver was disposed');
      // Bad input first, whatever the host: the program's loaders would honour what these name.
      refuseLoaderEnv(request.env, allowLoaderEnv, {
        patterns: LOADER_ENV_PATTERNS.windows,
        ignoreCase: true,
        fix: (name) =>
          `remove it, or allow it explicitly (Windows driver option allowLoaderEnv: ['${name}'])`,
      });
      const p = await probe();
      if (!p.available) {
        throw new DriverError(
          'ALEPH_DRIVER_UNAVAILABLE',
          'windows',
          `the Windows sandbox cannot run here: ${p.problems.join('; ')}`,
          { details: { problems: p.problems } },
        );
      }
      const win32 = await loadWin32();
      const profile = request.profile as WindowsProfile;
      if (profile.driver !== 'windows' || !Array.isArray(profile.tiers)) {
        throw new DriverError(
          'ALEPH_DRIVER_FAILED',
          'windows',
          'the profile was not made by the Windows driver',
        );
      }
      let commandLine: string;
      try {
        commandLine = buildCommandLine(request.program, request.args);
      } catch (error) {
        throw new InvalidInputError(
          'ALEPH_INVALID_COMMAND',
          'args',
          request.args.join(' '),
          (error as Error).message,
          'pass arguments without cmd.exe metacharacters, or run cmd.exe explicitly',
        );
      }
      for (const stub of profile.protected.stubs) if (!existsSync(stub)) mkdirSync(stub, { recursive: true });
      for (const stub of profile.protected.fileStubs) {
        if (existsSync(stub)) continue;
        mkdirSync(path.dirname(stub), { recursive: true });
        closeSync(openSync(stub, 'a'));
      }
      const tag = `aleph-${randomBytes(6).toString('hex')}`;
      const started = performance.now();
      const stdio = await openStdio(win32, tag, {
        stdin: request.stdin,
        maxOutputBytes: request.maxOutputBytes,
        onStdout: request.onStdout,
        onStderr: request.onStderr,
      });
      try {
        const environment = {
          ...pickEnvIgnoringCase(envAllowlist),
          USERPROFILE: request.workspace,
          HOME: request.workspace,
          TEMP: request.workspace,
          TMP: request.workspace,
          ...request.env,
        };
        const result = await runInJob(
          win32,
          profile,
          {
            commandLine,
            cwd: request.cwd,
            environment,
            stdin: stdio.stdin,
            stdout: stdio.stdout,
            stderr: stdio.stderr,
          },
          {
            tag,
            timeoutMs: request.timeoutMs,
            signal: request.signal,
            onStarted: () => stdio.closeChildEnds(),
          },
        );
        await stdio.finished(2000);
        return createSandboxOutput({
          exitCode: result.exitCode,
          signal: null,
          stdout: stdio.stdoutCapture.bytes(),
          stderr: stdio.stderrCapture.bytes(),
          stdoutTruncated: stdio.stdoutCapture.truncated,
          stderrTruncated: stdio.stderrCapture.truncated,
          timedOut: result.killedBy === 'timeout',
          durationMs: performance.now() - started,
          details: {
            driver: 'windows',
            tier: result.tier,
            ...(result.degraded.length === 0 ? {} : { degraded: result.degraded }),
            notEnforced: notEnforced(result.tier, profile),
            ...(result.killedBy === null ? {} : { killedBy: result.killedBy }),
            ...(result.cleanupErrors.length === 0 ? {} : { cleanupErrors: result.cleanupErrors }),
          },
        });
      } catch (error) {
        if (error instanceof DriverError || error instanceof InvalidInputError) throw error;
        const reasons = error instanceof LaunchError ? error.reasons : undefined;
        throw new DriverError(
          'ALEPH_DRIVER_FAILED',
          'windows',
          `could not run ${request.program}: ${(error as Error).message}`,
          { cause: error, ...(reasons === undefined ? {} : { details: { tiers: reasons } }) },
        );
      } finally {
        stdio.dispose();
      }
    },

    async dispose(): Promise<void> {
      disposed = true;
    },
  });
  return driver;
}
