import {
  chmodSync,
  chownSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { constants as osConstants } from 'node:os';
import { ProxyPool } from '@aleph/proxy/pool';
import {
  createSandboxOutput,
  DEFAULT_ENV_ALLOWLIST,
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
} from '@aleph/sandbox-core';
import { CgroupManager, detectCgroup } from './cgroup.js';
import { checkHelperSync, resolveHelperPath } from './helper.js';
import { readHostFacts } from './host.js';
import { BRIDGE_PORT, DEFAULT_MAX_PIDS, DEFAULT_SANDBOX_UID, type LinuxDriverOptions } from './options.js';
import { type LinuxProbe, probeLinux, which } from './probe.js';
import { buildLinuxProfile, type LinuxProfile } from './profile.js';
import { hostSeccompArch } from './seccomp.js';

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
  'limit.pids',
];

/** The Linux driver: `OsSandboxDriver` plus its probe details. */
export interface LinuxDriver extends OsSandboxDriver {
  readonly name: 'linux';
  probe(): Promise<LinuxProbe>;
  profileFor(caps: SandboxCapabilities, cwd: string, context: ProfileContext): LinuxProfile;
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
  const helperPath = options.helperPath ?? resolveHelperPath();
  const landlock = options.landlock ?? 'best-effort';
  const sandboxUid = options.sandboxUid ?? DEFAULT_SANDBOX_UID;
  const sandboxGid = options.sandboxGid ?? options.sandboxUid ?? DEFAULT_SANDBOX_UID;
  const maxPids = options.maxPids ?? DEFAULT_MAX_PIDS;
  const protectedPaths = resolveProtectedPaths(options);
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
      vaultPaths,
      sandboxUid,
      sandboxGid,
      maxPids,
      cpuQuotaPercent: options.cpuQuotaPercent,
      proxySocket: caps.network.kind === 'allowHosts' ? pool.socketPath(caps.network.hosts) : undefined,
    });

  /** Root host: the workspace must belong to the sandbox uid, and granted write paths be writable by it. */
  const checkOwnership = (request: DriverRunRequest) => {
    if (!host.isRoot) return;
    const st = statSync(request.workspace);
    if (st.uid !== sandboxUid) chownSync(request.workspace, sandboxUid, sandboxGid);
    if ((st.mode & 0o011) !== 0o011) chmodSync(request.workspace, (st.mode & 0o777) | 0o011);
    request.capabilities.fsWrite.forEach((p, i) => {
      const s = statSync(p);
      const writable =
        s.uid === sandboxUid || (s.mode & 0o002) !== 0 || (s.gid === sandboxGid && (s.mode & 0o020) !== 0);
      if (!writable) {
        throw new InvalidInputError(
          'ALEPH_INVALID_COMMAND',
          `capabilities.fsWrite[${i}]`,
          p,
          `is not writable by the sandbox uid ${sandboxUid} (the host runs as root and commands run as that uid)`,
          `give it to that uid (chown -R ${sandboxUid}:${sandboxGid} ${p}) or make it group-writable for gid ${sandboxGid}`,
        );
      }
    });
  };

  const driver: LinuxDriver = defineDriver({
    name: 'linux' as const,
    capabilities: LINUX_CAPABILITIES,
    probe,
    profileFor,

    async prepareWorkspace(dir: string): Promise<void> {
      if (host.isRoot) {
        // Owned by the sandbox uid; 0711 so bwrap, root without DAC capabilities, can still enter it.
        chownSync(dir, sandboxUid, sandboxGid);
        chmodSync(dir, 0o711);
      }
    },

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
        const helper = checkHelperSync(helperPath);
        if (!helper.ok) problems.push(`helper: ${helper.problem}; fix: ${helper.fix}`);
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
      checkOwnership(request);
      for (const stub of profile.stubs) {
        if (existsSync(stub.path) || lstatExists(stub.path)) continue;
        if (stub.kind === 'dir') mkdirSync(stub.path, { mode: 0o755 });
        else writeFileSync(stub.path, '', { mode: 0o644 });
      }

      const lease =
        request.capabilities.network.kind === 'allowHosts'
          ? await pool.acquire(request.capabilities.network.hosts)
          : undefined;
      let leaf: string | undefined;
      try {
        const env: Record<string, string> = {
          PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
          ...pickEnv(envAllowlist),
          HOME: request.workspace,
          TMPDIR: '/tmp',
          ...request.env,
        };
        if (lease !== undefined)
          Object.assign(env, lease.proxy.env({ host: '127.0.0.1', port: BRIDGE_PORT }));
        // RLIMIT_NPROC counts every process of the uid, so the budget is on top of what it already runs.
        const nprocUid = host.isRoot ? sandboxUid : host.uid;
        const nproc = profile.limits.maxPids + processesOf(nprocUid);
        const args = [...profile.bwrapArgs];
        args.splice(args.length - 1, 0, '--rlimit', `NPROC=${nproc}`);
        args.push(request.program, ...request.args);

        let file = p.bwrapPath;
        let argv = args;
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
          file = helperPath;
          argv = ['--enter-cgroup', leaf, '--', p.bwrapPath, ...args];
        }
        const result = await runBoundedProcess({
          file,
          args: argv,
          env,
          cwd: '/',
          ...(request.stdin === undefined ? {} : { stdin: request.stdin }),
          timeoutMs: request.timeoutMs,
          maxOutputBytes: request.maxOutputBytes,
          extraFds: [Buffer.from(profile.seccomp.program, 'base64')],
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

function lstatExists(p: string): boolean {
  try {
    lstatSync(p);
    return true;
  } catch {
    return false;
  }
}
