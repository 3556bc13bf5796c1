import { randomBytes } from 'node:crypto';
import { existsSync, lstatSync, mkdirSync, readdirSync, realpathSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { type ProxyLease, ProxyPool } from '@aleph/proxy/pool';
import {
  createSandboxOutput,
  DEFAULT_ENV_ALLOWLIST,
  DEFAULT_HOME_PROTECTED_PATHS,
  type DriverCapabilityId,
  DriverError,
  type DriverRunRequest,
  defaultVaultPaths,
  defineDriver,
  InvalidInputError,
  LOADER_ENV_PATTERNS,
  type OsSandboxDriver,
  type ProfileContext,
  pickEnv,
  refuseLoaderEnv,
  resolveProtectedPaths,
  runBoundedProcess,
  type SandboxCapabilities,
  type SandboxOutput,
} from '@aleph/sandbox-core';
import { createMacosFiles } from './files.js';
import { nodeMacosFs } from './files-binding.js';
import { DEFAULT_PATH, DEFAULT_SANDBOX_EXEC, type MacosDriverOptions, SYSTEM_READ_PATHS } from './options.js';
import { type MacosProbe, probeMacos } from './probe.js';
import {
  buildMacosProfile,
  forExecution,
  type MacosProfile,
  type MacosProfileInputs,
  PROFILE_TAG,
} from './profile.js';
import { checkSbpl } from './sbpl.js';
import { collectSeatbeltViolations } from './violations.js';

/** Everything the macOS driver can enforce. */
export const MACOS_CAPABILITIES: readonly DriverCapabilityId[] = [
  'exec',
  'exec.stdin-stream',
  'fs.confine',
  'fs.read',
  'fs.write',
  'fs.protected-paths',
  'net.none',
  'net.allowlist',
  'net.all',
  'proc.deny-spawn',
  'limit.memory',
];

/** The macOS driver: `OsSandboxDriver` plus its probe details. */
export interface MacosDriver extends OsSandboxDriver {
  readonly name: 'macos';
  probe(): Promise<MacosProbe>;
  profileFor(caps: SandboxCapabilities, cwd: string, context: ProfileContext): Promise<MacosProfile>;
}

/**
 * The path as Seatbelt sees it: the realpath of its deepest existing ancestor, plus the components that do
 * not exist yet (`/var/folders/…` is `/private/var/folders/…`; a vault file may not exist).
 */
export function canonicalPath(p: string): string {
  const missing: string[] = [];
  let current = path.resolve(p);
  for (;;) {
    try {
      return path.join(realpathSync.native(current), ...missing);
    } catch {
      const parent = path.dirname(current);
      if (parent === current) return path.resolve(p);
      missing.unshift(path.basename(current));
      current = parent;
    }
  }
}

/**
 * The host's home directories, canonical and existing: the user's real home, `/var/root`, and every
 * directory in `/Users`. The profile applies the home list to those a writable root holds.
 */
export function macosHomes(home: string = os.homedir()): string[] {
  const candidates = [home, '/var/root'];
  try {
    for (const name of readdirSync('/Users')) candidates.push(path.join('/Users', name));
  } catch {
    // no /Users (not macOS, or unreadable)
  }
  const isDir = (p: string) => {
    try {
      return lstatSync(p).isDirectory();
    } catch {
      return false;
    }
  };
  return [...new Set(candidates.map(canonicalPath))].filter(isDir);
}

/**
 * Sets the core-dump and address-space limits, then execs `sandbox-exec` with the rest of the arguments.
 * `$1` is the memory limit in KiB, or empty for none. Arguments stay arguments: nothing is spliced.
 */
const LIMITS_SCRIPT =
  'ulimit -c 0 2>/dev/null; if [ -n "$1" ]; then ulimit -v "$1" || { echo "aleph-sandbox: cannot set the memory limit (ulimit -v $1)" >&2; exit 125; }; fi; shift; exec "$@"';

/**
 * Creates the macOS driver: a deny-default Seatbelt profile of our own, run with `sandbox-exec`, every
 * path a `-D` parameter; `allowHosts` through the managed proxy on a loopback port; `RLIMIT_AS` for
 * `maxMemoryMb`; a private TMPDIR per execution; Seatbelt denials attached to failed runs.
 *
 * @example
 * ```ts
 * const sandbox = new WorkspaceSandbox({ driver: createMacosDriver(), workspaceRoot })
 * const out = await sandbox.execute({ sessionId: 's1', program: 'ls' })
 * ```
 */
export function createMacosDriver(options: MacosDriverOptions = {}): MacosDriver {
  const sandboxExec = options.sandboxExecPath ?? DEFAULT_SANDBOX_EXEC;
  const protectedPaths = resolveProtectedPaths(options);
  const vaultPaths = options.vaultPaths ?? defaultVaultPaths(os.homedir());
  const homeProtectedPaths = options.homeProtectedPaths ?? DEFAULT_HOME_PROTECTED_PATHS;
  const alephDir = options.alephDir ?? path.join(os.homedir(), '.aleph');
  const envAllowlist = options.envAllowlist ?? DEFAULT_ENV_ALLOWLIST;
  const collect = options.collectViolations ?? true;
  const allowLoaderEnv = options.allowLoaderEnv ?? [];
  const platform = options.platform ?? process.platform;
  const fileRules = {
    protectedPaths,
    homeProtectedPaths,
    hiddenPaths: [...vaultPaths, ...(options.auditLogPath === undefined ? [] : [options.auditLogPath])],
  };
  const pool = new ProxyPool({
    transport: { kind: 'loopback' },
    ...(options.proxy?.deny === undefined ? {} : { deny: options.proxy.deny }),
    ...(options.proxy?.resolver === undefined ? {} : { resolver: options.proxy.resolver }),
    ...(options.proxy?.idleMs === undefined ? {} : { idleMs: options.proxy.idleMs }),
    ...(options.proxy?.parent === undefined ? {} : { parent: options.proxy.parent }),
  });
  let disposed = false;
  let probed: Promise<MacosProbe> | undefined;
  let fixed: { systemPaths: string[]; scratchBase: string } | undefined;
  const hostPaths = () => {
    fixed ??= {
      systemPaths: [...new Set(SYSTEM_READ_PATHS.filter((p) => existsSync(p)).map(canonicalPath))],
      scratchBase: canonicalPath(os.tmpdir()),
    };
    return fixed;
  };

  const inputs = (proxyPort: number | undefined): MacosProfileInputs => {
    const host = hostPaths();
    return {
      systemPaths: host.systemPaths,
      protectedPaths,
      vaultPaths,
      homes: macosHomes(),
      homeProtectedPaths,
      alephDir,
      auditLogPath: options.auditLogPath,
      canonical: canonicalPath,
      tag: PROFILE_TAG,
      scratchDir: path.join(host.scratchBase, PROFILE_TAG),
      proxyPort,
    };
  };

  const driver: MacosDriver = defineDriver({
    name: 'macos' as const,
    capabilities: MACOS_CAPABILITIES,

    probe(): Promise<MacosProbe> {
      probed ??= Promise.resolve(probeMacos({ sandboxExecPath: sandboxExec }));
      return probed;
    },

    async profileFor(caps: SandboxCapabilities, cwd: string, context: ProfileContext): Promise<MacosProfile> {
      let port: number | undefined;
      if (caps.network.kind === 'allowHosts') {
        // The profile names the proxy's port; the proxy stays up (idle timeout) for the run that follows.
        const lease = await pool.acquire(caps.network.hosts);
        port = lease.proxy.address?.port;
        lease.release();
      }
      return buildMacosProfile(caps, cwd, context.workspace, inputs(port));
    },

    async run(request: DriverRunRequest): Promise<SandboxOutput> {
      if (disposed) throw new DriverError('ALEPH_DRIVER_FAILED', 'macos', 'the macOS driver was disposed');
      // Bad input first, on every platform: dyld (and ports of GNU tools) would load what they name.
      refuseLoaderEnv(request.env, allowLoaderEnv, {
        patterns: LOADER_ENV_PATTERNS.macos,
        fix: (name) => `remove it, or allow it explicitly (macOS driver option allowLoaderEnv: ['${name}'])`,
      });
      if (platform !== 'darwin') {
        throw new DriverError(
          'ALEPH_DRIVER_UNAVAILABLE',
          'macos',
          `the macOS sandbox cannot run here: this is ${platform}; use the driver for this platform`,
        );
      }
      let profile = request.profile as MacosProfile;
      if (profile.driver !== 'macos' || typeof profile.sbpl !== 'string') {
        throw new DriverError('ALEPH_DRIVER_FAILED', 'macos', 'the profile was not made by the macOS driver');
      }
      let lease: ProxyLease | undefined;
      // This execution's own log tag and TMPDIR, swapped into the profile's placeholders.
      const tag = `aleph-${randomBytes(6).toString('hex')}`;
      const scratchDir = path.join(hostPaths().scratchBase, tag);
      let scratchMade = false;
      try {
        if (request.capabilities.network.kind === 'allowHosts') {
          lease = await pool.acquire(request.capabilities.network.hosts);
          const port = lease.proxy.address?.port;
          if (profile.network.mode !== 'proxy' || profile.network.port !== port) {
            // The proxy was restarted since the profile was made: same rules, its new port.
            profile = buildMacosProfile(request.capabilities, request.cwd, request.workspace, inputs(port));
          }
        }
        const { sbpl, params: paramTable } = forExecution(profile, tag, scratchDir);
        const problems = checkSbpl(sbpl, paramTable);
        if (problems.length > 0) {
          throw new DriverError(
            'ALEPH_DRIVER_FAILED',
            'macos',
            `refusing a malformed profile: ${problems.join('; ')}`,
          );
        }
        mkdirSync(scratchDir, { mode: 0o700 });
        scratchMade = true;

        const env: Record<string, string> = {
          PATH: DEFAULT_PATH,
          ...pickEnv(envAllowlist),
          HOME: request.workspace,
          TMPDIR: `${scratchDir}/`,
          ...request.env,
          ...(lease === undefined ? {} : lease.proxy.env()),
        };
        const memoryKb =
          request.capabilities.maxMemoryMb === undefined
            ? ''
            : String(request.capabilities.maxMemoryMb * 1024);
        const params = Object.entries(paramTable).flatMap(([k, v]) => ['-D', `${k}=${v}`]);
        const startedAt = new Date();
        const result = await runBoundedProcess({
          file: '/bin/sh',
          args: [
            '-c',
            LIMITS_SCRIPT,
            'aleph-limits',
            memoryKb,
            sandboxExec,
            '-p',
            sbpl,
            ...params,
            '--',
            request.program,
            ...request.args,
          ],
          env,
          cwd: request.cwd,
          ...(request.stdin === undefined ? {} : { stdin: request.stdin }),
          timeoutMs: request.timeoutMs,
          maxOutputBytes: request.maxOutputBytes,
          ...(request.signal === undefined ? {} : { signal: request.signal }),
          ...(request.onStdout === undefined ? {} : { onStdout: request.onStdout }),
          ...(request.onStderr === undefined ? {} : { onStderr: request.onStderr }),
        });
        const stderr = Buffer.from(result.stderr).toString('utf8');
        if (
          result.killedBy === null &&
          result.exitCode === 125 &&
          stderr.startsWith('aleph-sandbox: cannot set')
        ) {
          throw new DriverError('ALEPH_DRIVER_FAILED', 'macos', stderr.trim());
        }
        // sandbox-exec exits with a sysexits code when it cannot apply the profile (not when the program
        // fails: it execs the program, whose status is then ours).
        if (
          result.killedBy === null &&
          result.exitCode !== null &&
          result.exitCode >= 64 &&
          result.exitCode <= 78 &&
          /^sandbox-exec: (?!execvp)/.test(stderr)
        ) {
          throw new DriverError(
            'ALEPH_DRIVER_FAILED',
            'macos',
            `sandbox-exec could not apply the profile: ${stderr.trim()}`,
          );
        }
        const failed = result.exitCode !== 0 || result.signal !== null;
        const report =
          collect && failed
            ? await collectSeatbeltViolations(tag, startedAt, { timeoutMs: 4000 })
            : undefined;
        return createSandboxOutput({
          exitCode: result.exitCode,
          signal: result.signal,
          stdout: result.stdout,
          stderr: result.stderr,
          stdoutTruncated: result.stdoutTruncated,
          stderrTruncated: result.stderrTruncated,
          timedOut: result.timedOut,
          durationMs: result.durationMs,
          details: {
            driver: 'macos',
            tag,
            ...(report === undefined ? {} : { violations: report.violations }),
            ...(report?.error == null ? {} : { violationsError: report.error }),
            ...(result.killedBy === null ? {} : { killedBy: result.killedBy }),
          },
        });
      } catch (error) {
        if (error instanceof DriverError || error instanceof InvalidInputError) throw error;
        throw new DriverError(
          'ALEPH_DRIVER_FAILED',
          'macos',
          `could not run ${request.program}: ${(error as Error).message}`,
          {
            cause: error,
          },
        );
      } finally {
        lease?.release();
        if (scratchMade) rmSync(scratchDir, { recursive: true, force: true });
      }
    },

    // Planned: see files.ts for what is done, and what is refused, on macOS.
    files() {
      if (platform !== 'darwin' && options.filesBinding === undefined) {
        throw new DriverError(
          'ALEPH_DRIVER_UNAVAILABLE',
          'macos',
          `the macOS file mechanism cannot run here: this is ${platform} (its open flags are macOS's); use the driver for this platform`,
        );
      }
      return createMacosFiles(fileRules, options.filesBinding ?? nodeMacosFs);
    },

    async dispose(): Promise<void> {
      disposed = true;
      await pool.dispose();
    },
  });
  return driver;
}
