import { existsSync, mkdirSync, readdirSync, realpathSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { constants as osConstants } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ProxyPool } from '@aleph/proxy/pool';
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
  type OsSandboxDriver,
  type ProfileContext,
  pickEnv,
  resolveProtectedPaths,
  runBoundedProcess,
  type SandboxCapabilities,
  type SandboxOutput,
  sessionKeyToFilename,
} from '@aleph/sandbox-core';
import { CgroupManager, detectCgroup } from './cgroup.js';
import { encodeEnv, refuseLoaderEnv } from './env.js';
import { readHostFacts } from './host.js';
import { defaultMaxOpenFiles, readFileMax, readOpenFilesHardLimit } from './limits.js';
import { linuxNotEnforced } from './not-enforced.js';
import {
  BRIDGE_PORT,
  DEFAULT_MAX_PIDS,
  DEFAULT_SANDBOX_UID_RANGE,
  type LinuxDriverOptions,
} from './options.js';
import { type LinuxProbe, probeLinux, which } from './probe.js';
import { buildLinuxProfile, type LinuxProfile } from './profile.js';
import { hostSeccompArch } from './seccomp.js';
import { ensureSessionHome, type GitIdentity, readGitIdentity, sessionHomeEnv } from './session-home.js';

/** The only environment bwrap and the host side of the helper ever get. */
const HOST_SIDE_ENV = { PATH: '/usr/sbin:/usr/bin:/sbin:/bin' } as const;

/** Everything the Linux driver can enforce. */
export const LINUX_CAPABILITIES: readonly DriverCapabilityId[] = [
  'exec',
  'fs.confine',
  'fs.read',
  'fs.write',
  'fs.protected-paths',
  'net.none',
  'net.allowlist',
  'net.all',
  'proc.deny-spawn',
  'limit.memory',
  'limit.file-size',
  'limit.pids',
];

/** The Linux driver: `OsSandboxDriver` plus its probe details. */
export interface LinuxDriver extends OsSandboxDriver {
  readonly name: 'linux';
  probe(): Promise<LinuxProbe>;
  profileFor(caps: SandboxCapabilities, cwd: string, context: ProfileContext): LinuxProfile;
}

function defaultHelperPath(): string {
  // dist/driver.js and src/driver.ts both sit one level below the package root…
  const beside = path.resolve(
    path.dirname(fileURLToPath(import.meta.url)),
    '..',
    'native',
    'aleph-sandbox-init',
  );
  if (existsSync(beside)) return beside;
  // …unless this code was bundled into another package (the aleph-sandbox CLI): find the package itself,
  // first by the node_modules walk Node's resolution would make (a few stat calls), then by resolving
  // it, which costs milliseconds of a CLI start.
  for (let dir = path.dirname(fileURLToPath(import.meta.url)); ; dir = path.dirname(dir)) {
    const candidate = path.join(
      dir,
      'node_modules',
      '@aleph',
      'driver-linux',
      'native',
      'aleph-sandbox-init',
    );
    if (existsSync(candidate)) return realpathSync(candidate);
    if (dir === path.dirname(dir)) break;
  }
  try {
    const manifest = createRequire(import.meta.url).resolve('@aleph/driver-linux/package.json');
    return path.join(path.dirname(manifest), 'native', 'aleph-sandbox-init');
  } catch {
    return beside;
  }
}

/**
 * Processes owned by `uid` right now (RLIMIT_NPROC counts them all), cached for 250 ms. Without a
 * delegated cgroup v2 the process limit is per uid, so executions running at the same time share it.
 */
const processCounts = new Map<number, { at: number; count: number }>();
function processesOf(uid: number): number {
  const cached = processCounts.get(uid);
  if (cached !== undefined && Date.now() - cached.at < 250) return cached.count;
  let count = 0;
  for (const name of readdirSync('/proc')) {
    if (name.charCodeAt(0) < 48 || name.charCodeAt(0) > 57) continue;
    try {
      if (statSync(`/proc/${name}`).uid === uid) count++;
    } catch {
      // exited
    }
  }
  processCounts.set(uid, { at: Date.now(), count });
  return count;
}

/**
 * Creates the Linux driver: bubblewrap namespaces → the native helper (rlimits, identity drop when the
 * host is root, Landlock, the network bridge, seccomp) → the program. See `LinuxDriverOptions`.
 *
 * @example
 * ```ts
 * const sandbox = new WorkspaceSandbox({ driver: createLinuxDriver(), workspaceRoot })
 * await sandbox.execute({ sessionId: 's', program: 'ls' })
 * ```
 */
export function createLinuxDriver(options: LinuxDriverOptions = {}): LinuxDriver {
  const host = readHostFacts();
  const arch = hostSeccompArch() ?? 'x86_64';
  const helperPath = options.helperPath ?? defaultHelperPath();
  const landlock = options.landlock ?? 'best-effort';
  const sandboxUid = options.sandboxUid;
  const sandboxGid = options.sandboxGid ?? options.sandboxUid;
  const uidRange = options.sandboxUidRange ?? DEFAULT_SANDBOX_UID_RANGE;
  const homeRoot =
    options.homeRoot === false ? undefined : (options.homeRoot ?? path.join(host.home, '.aleph', 'homes'));
  const stateDir = options.stateDir ?? path.join(host.home, '.aleph', 'run');
  const allowLoaderEnv = options.allowLoaderEnv ?? [];
  let gitIdentity: GitIdentity | undefined;
  let stateReady = false;
  const maxPids = options.maxPids ?? DEFAULT_MAX_PIDS;
  const maxOpenFiles =
    options.maxOpenFiles ??
    defaultMaxOpenFiles({ maxPids, fileMax: readFileMax(), hardLimit: readOpenFilesHardLimit() });
  const protectedPaths = resolveProtectedPaths(options);
  const homeProtectedPaths = options.homeProtectedPaths ?? DEFAULT_HOME_PROTECTED_PATHS;
  // Protected names at the top of a writable root, for the session's git excludes.
  const topLevelProtected = [
    ...new Set(protectedPaths.filter((p) => !p.startsWith('.git')).map((p) => p.split('/')[0] as string)),
  ];
  const vaultPaths = options.vaultPaths ?? defaultVaultPaths(host.home);
  const envAllowlist = options.envAllowlist ?? DEFAULT_ENV_ALLOWLIST;
  const pool = new ProxyPool({
    ...(options.proxy?.deny === undefined ? {} : { deny: options.proxy.deny }),
    ...(options.proxy?.resolver === undefined ? {} : { resolver: options.proxy.resolver }),
    ...(options.proxy?.idleMs === undefined ? {} : { idleMs: options.proxy.idleMs }),
    ...(options.proxy?.parent === undefined ? {} : { parent: options.proxy.parent }),
    // The sandboxed program (and its bridge) run as another uid when the host is root.
    transport: { kind: 'unix', socketMode: host.isRoot ? 0o666 : 0o600 },
  });
  let probed: Promise<LinuxProbe> | undefined;
  let cgroups: CgroupManager | undefined;
  let disposed = false;
  let ready: { bwrapPath: string; tier: string } | undefined;

  const probe = (): Promise<LinuxProbe> => {
    probed ??= probeLinux({
      host,
      bwrap: options.bwrapPath ?? 'bwrap',
      helperPath,
      landlock,
      ...(options.cgroupRoot === undefined ? {} : { cgroupRoot: options.cgroupRoot }),
      ...(sandboxUid === undefined ? {} : { sandboxUid }),
      maxFileMb: options.maxFileMb,
      cpuQuotaPercent: options.cpuQuotaPercent,
    });
    return probed;
  };

  const profileFor = (caps: SandboxCapabilities, cwd: string, context: ProfileContext): LinuxProfile =>
    buildLinuxProfile(caps, cwd, context.workspace, {
      host,
      arch,
      helperPath,
      landlock,
      protectedPaths,
      homeProtectedPaths,
      vaultPaths,
      sandboxUid,
      sandboxGid,
      uidRange,
      stateDir,
      sessionHome:
        homeRoot === undefined ? undefined : path.join(homeRoot, sessionKeyToFilename(context.sessionId)),
      maxPids,
      maxOpenFiles,
      maxFileMb: options.maxFileMb,
      tmpfsSizeMb: options.tmpfsSizeMb,
      cpuQuotaPercent: options.cpuQuotaPercent,
      proxySocket: caps.network.kind === 'allowHosts' ? pool.socketPath(caps.network.hosts) : undefined,
    });

  const driver: LinuxDriver = defineDriver({
    name: 'linux' as const,
    capabilities: LINUX_CAPABILITIES,
    probe,
    profileFor,

    async run(request: DriverRunRequest): Promise<SandboxOutput> {
      if (disposed) throw new DriverError('ALEPH_DRIVER_FAILED', 'linux', 'the Linux driver was disposed');
      // The run path checks only what it cannot do without (bwrap, the helper, an architecture with
      // seccomp tables); the helper itself enforces a required Landlock, and bwrap reports namespace
      // failures. probe() does the full, slower inspection for doctor.
      if (ready === undefined) {
        const bwrapPath = which(options.bwrapPath ?? 'bwrap');
        const problems: string[] = [];
        if (bwrapPath === null)
          problems.push('bubblewrap: bwrap not found on PATH; fix: apt-get install -y bubblewrap');
        if (!existsSync(helperPath)) {
          problems.push(
            `helper: ${helperPath} is not built; fix: install gcc and run "npm rebuild @aleph/driver-linux"`,
          );
        }
        if (hostSeccompArch() === undefined)
          problems.push(`architecture: ${process.arch} has no seccomp tables here`);
        if (bwrapPath === null || problems.length > 0) {
          throw new DriverError(
            'ALEPH_DRIVER_UNAVAILABLE',
            'linux',
            `the Linux sandbox cannot run here: ${problems.join('; ')}`,
            {
              details: { problems },
            },
          );
        }
        const info = detectCgroup(options.cgroupRoot);
        cgroups = info.available ? new CgroupManager(info) : undefined;
        ready = { bwrapPath, tier: cgroups === undefined ? 'rlimits' : 'cgroup v2' };
      }
      const p = ready;
      const profile = request.profile as LinuxProfile;
      if (profile.driver !== 'linux' || !Array.isArray(profile.bwrapArgs)) {
        throw new DriverError('ALEPH_DRIVER_FAILED', 'linux', 'the profile was not made by the Linux driver');
      }
      // Checked before anything is created: a refused request leaves the host as it found it.
      refuseLoaderEnv(request.env, allowLoaderEnv);
      if (!stateReady) {
        mkdirSync(stateDir, { recursive: true, mode: 0o700 });
        stateReady = true;
      }
      if (profile.home !== null && homeRoot !== undefined) {
        gitIdentity ??= readGitIdentity(host.home);
        ensureSessionHome(homeRoot, sessionKeyToFilename(request.sessionId), gitIdentity, topLevelProtected);
      }

      const lease =
        request.capabilities.network.kind === 'allowHosts'
          ? await pool.acquire(request.capabilities.network.hosts)
          : undefined;
      let leaf: string | undefined;
      try {
        // The command's environment goes to the helper on a pipe and is set only at its final execve.
        const env: Record<string, string> = {
          PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
          ...pickEnv(envAllowlist),
          ...(profile.home === null ? { HOME: request.workspace } : sessionHomeEnv()),
          TMPDIR: '/tmp',
          ...request.env,
        };
        if (lease !== undefined)
          Object.assign(env, lease.proxy.env({ host: '127.0.0.1', port: BRIDGE_PORT }));
        // RLIMIT_NPROC counts every process of the uid, so a shared uid's budget is on top of what it
        // already runs; a uid of the command's own starts from nothing.
        const sharedUid = !host.isRoot
          ? host.uid
          : profile.identity.mode === 'drop-to-uid' && typeof profile.identity.uid === 'number'
            ? profile.identity.uid
            : undefined;
        const nproc = profile.limits.maxPids + (sharedUid === undefined ? 0 : processesOf(sharedUid));
        const args = [...profile.bwrapArgs];
        args.splice(args.length - 1, 0, '--rlimit', `NPROC=${nproc}`);
        args.push(request.program, ...request.args);

        const launch = [...profile.launch];
        if (cgroups !== undefined) {
          leaf = await cgroups.createLeaf({
            pidsMax: profile.limits.maxPids,
            ...(request.capabilities.maxMemoryMb === undefined
              ? {}
              : { memoryMaxBytes: request.capabilities.maxMemoryMb * 1024 * 1024 }),
            ...(profile.limits.cpuQuotaPercent === null
              ? {}
              : { cpuQuotaPercent: profile.limits.cpuQuotaPercent }),
          });
          launch.push('--enter-cgroup', leaf);
        }
        const result = await runBoundedProcess({
          file: helperPath,
          args: ['--launch', ...launch, '--', p.bwrapPath, ...args],
          env: HOST_SIDE_ENV,
          cwd: '/',
          gracefulStop: { signal: 'SIGTERM', graceMs: 2000 },
          ...(request.stdin === undefined ? {} : { stdin: request.stdin }),
          timeoutMs: request.timeoutMs,
          maxOutputBytes: request.maxOutputBytes,
          extraFds: [Buffer.from(profile.seccomp.program, 'base64'), encodeEnv(env)],
          ...(request.signal === undefined ? {} : { signal: request.signal }),
          ...(request.onStdout === undefined ? {} : { onStdout: request.onStdout }),
          ...(request.onStderr === undefined ? {} : { onStderr: request.onStderr }),
        });
        const stderr = Buffer.from(result.stderr).toString('utf8');
        if (
          result.killedBy === null &&
          result.exitCode === 125 &&
          /^aleph-sandbox-init: (?!cannot execute)/m.test(stderr)
        ) {
          throw new DriverError(
            'ALEPH_DRIVER_FAILED',
            'linux',
            `the sandbox helper failed: ${stderr.trim()}`,
          );
        }
        if (result.killedBy === null && result.exitCode === 1 && stderr.startsWith('bwrap: ')) {
          throw new DriverError(
            'ALEPH_DRIVER_FAILED',
            'linux',
            `bubblewrap could not set up the sandbox: ${stderr.trim()}`,
          );
        }
        // bwrap reports a program killed by signal N as exit status 128+N (as a shell does for a child).
        const killedBySignal =
          result.signal === null &&
          result.exitCode !== null &&
          result.exitCode > 128 &&
          result.exitCode <= 128 + 64
            ? signalName(result.exitCode - 128)
            : undefined;
        return createSandboxOutput({
          exitCode: killedBySignal === undefined ? result.exitCode : null,
          signal: killedBySignal ?? result.signal,
          stdout: result.stdout,
          stderr: result.stderr,
          stdoutTruncated: result.stdoutTruncated,
          stderrTruncated: result.stderrTruncated,
          timedOut: result.timedOut,
          durationMs: result.durationMs,
          details: {
            driver: 'linux',
            limits: p.tier,
            identity: profile.identity,
            notEnforced: linuxNotEnforced({
              cgroup: cgroups !== undefined,
              isRoot: host.isRoot,
              uid: host.isRoot ? (sandboxUid ?? 'per-run') : host.uid,
              maxFileMb:
                profile.limits.rlimits.FSIZE === undefined
                  ? undefined
                  : profile.limits.rlimits.FSIZE / (1024 * 1024),
              cpuQuota: profile.limits.cpuQuotaPercent !== null,
            }),
            ...(killedBySignal === undefined ? {} : { exitStatus: result.exitCode }),
            ...(result.killedBy === null ? {} : { killedBy: result.killedBy }),
          },
        });
      } catch (error) {
        if (error instanceof DriverError || error instanceof InvalidInputError) throw error;
        throw new DriverError(
          'ALEPH_DRIVER_FAILED',
          'linux',
          `could not run ${request.program}: ${(error as Error).message}`,
          { cause: error },
        );
      } finally {
        lease?.release();
        if (leaf !== undefined) await cgroups?.destroyLeaf(leaf);
      }
    },

    async dispose(): Promise<void> {
      disposed = true;
      await pool.dispose();
    },
  });
  return driver;
}

function signalName(n: number): string | undefined {
  for (const [name, value] of Object.entries(osConstants.signals)) if (value === n) return name;
  return undefined;
}
