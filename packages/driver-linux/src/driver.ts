import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { ProxyPool } from '@aleph/proxy/pool';
import {
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
  strictCapabilities,
} from '@aleph/sandbox-core';
import { type CgroupInfo, CgroupManager, detectCgroup, exerciseCgroup, launcherRunIn } from './cgroup.js';
import { buildDirectProfile, PROXY_PORT_ARG } from './direct-profile.js';
import { encodeEnv, refuseLoaderEnv } from './env.js';
import { RecordingView, stillAnswers } from './fs-view.js';
import { checkHelperSync, type HelperProbeOutput, resolveHelperPath } from './helper.js';
import { readHostFacts } from './host.js';
import { defaultMaxOpenFiles, readFileMax, readOpenFilesHardLimit } from './limits.js';
import { linuxNotEnforced } from './not-enforced.js';
import {
  BRIDGE_PORT,
  DEFAULT_MAX_PIDS,
  DEFAULT_SANDBOX_UID,
  DEFAULT_SANDBOX_UID_RANGE,
  HOST_SIDE_ENV,
  INNER_HOME,
  type LinuxDriverOptions,
} from './options.js';
import { selectTier, type TierSelection, withTiers } from './preflight.js';
import { type LinuxProbe, probeLinux, which } from './probe.js';
import { buildLinuxProfile, type LinuxProfile } from './profile.js';
import { launchOutput } from './run-result.js';
import { hostSeccompArch } from './seccomp.js';
import { ensureSessionHome, type GitIdentity, readGitIdentity, sessionHomeEnv } from './session-home.js';
import { createForkServer } from './spawner.js';
import { candidateTiers, type LinuxTierId, linuxTier, tierGaps } from './tiers.js';

const execFileAsync = promisify(execFile);

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
  profileFor(caps: SandboxCapabilities, cwd: string, context: ProfileContext): Promise<LinuxProfile>;
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
  const sandboxUid = options.sandboxUid;
  const sandboxGid = options.sandboxGid ?? options.sandboxUid;
  const uidRange = options.sandboxUidRange ?? DEFAULT_SANDBOX_UID_RANGE;
  const homeRoot =
    options.homeRoot === false ? undefined : (options.homeRoot ?? path.join(host.home, '.aleph', 'homes'));
  const stateDir = options.stateDir ?? path.join(host.home, '.aleph', 'run');
  const allowLoaderEnv = options.allowLoaderEnv ?? [];
  let gitIdentity: GitIdentity | undefined;
  let runs = 0;
  // Report names no other driver instance (or an earlier process of this pid) can have used.
  const reportPrefix = `report-${process.pid}-${randomBytes(4).toString('hex')}`;
  let stateReady = false;
  const forkServer = options.forkServer === false ? undefined : createForkServer(helperPath, stateDir);
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
  // Never visible, whatever is granted: the vault, the audit log, and every session's HOME (each session
  // sees only its own, at /run/aleph/home).
  const vaultPaths = [
    ...(options.vaultPaths ?? defaultVaultPaths(host.home)),
    ...(options.auditLogPath === undefined ? [] : [options.auditLogPath]),
    ...(homeRoot === undefined ? [] : [homeRoot]),
  ];
  const envAllowlist = options.envAllowlist ?? DEFAULT_ENV_ALLOWLIST;
  const poolOptions = {
    ...(options.proxy?.deny === undefined ? {} : { deny: options.proxy.deny }),
    ...(options.proxy?.resolver === undefined ? {} : { resolver: options.proxy.resolver }),
    ...(options.proxy?.idleMs === undefined ? {} : { idleMs: options.proxy.idleMs }),
    ...(options.proxy?.parent === undefined ? {} : { parent: options.proxy.parent }),
  };
  const pool = new ProxyPool({
    ...poolOptions,
    // The sandboxed program (and its bridge) run as another uid when the host is root.
    transport: { kind: 'unix', socketMode: host.isRoot ? 0o666 : 0o600 },
  });
  // Tier 3 has no network namespace to bridge into: its commands reach a proxy on the host's loopback.
  let loopbackPool: ProxyPool | undefined;
  const minimumTier = options.minimumTier ?? 3;
  let selection: Promise<TierSelection> | undefined;
  let facts:
    | Promise<{
        landlockAbi: number;
        mknod: boolean;
        cgroup: CgroupInfo;
        manager: CgroupManager | undefined;
      }>
    | undefined;
  const privateTmps = new Map<string, number>();
  let probed: Promise<LinuxProbe> | undefined;
  let cgroups: CgroupManager | undefined;
  let disposed = false;
  let ready: { bwrapPath: string; tier: string } | undefined;
  const plans = new Map<string, { profile: LinuxProfile; queries: RecordingView['queries'] }>();
  // A cached plan's seccomp program, decoded once.
  const programs = new WeakMap<LinuxProfile, Buffer>();
  const seccompBytes = (profile: LinuxProfile): Buffer => {
    let bytes = programs.get(profile);
    if (bytes === undefined) {
      bytes = Buffer.from(profile.seccomp.program, 'base64');
      programs.set(profile, bytes);
    }
    return bytes;
  };

  /**
   * What the gaps of a tier depend on, found once per driver by using each mechanism: the Landlock ABI
   * (when the helper's --probe enforced a ruleset) and a delegated cgroup (a leaf that took limits and a
   * process, `exerciseCgroup`; its manager then makes the runs' leaves).
   */
  const hostFacts = () => {
    facts ??= (async () => {
      let landlockAbi = 0;
      let mknod = false;
      try {
        const said = JSON.parse((await execFileAsync(helperPath, ['--probe'])).stdout) as HelperProbeOutput;
        if (said.landlock === 'ok') landlockAbi = said.landlock_abi;
        mknod = said.mknod === 'ok';
      } catch {
        // no helper: every tier fails its preflight and says why
      }
      let cgroup = detectCgroup(options.cgroupRoot);
      let manager: CgroupManager | undefined;
      if (cgroup.available && checkHelperSync(helperPath).ok) {
        manager = new CgroupManager(cgroup);
        cgroup = await exerciseCgroup(manager, launcherRunIn(helperPath));
      } else if (cgroup.available) {
        cgroup = { ...cgroup, available: false, detail: `${cgroup.detail}; not used: the helper cannot run` };
      }
      return { landlockAbi, mknod, cgroup, manager: cgroup.available ? manager : undefined };
    })();
    return facts;
  };
  const gapsOf = async (tier: LinuxTierId) => {
    const f = await hostFacts();
    return tierGaps(tier, {
      isRoot: host.isRoot,
      cgroup: f.cgroup.available,
      landlockAbi: f.landlockAbi,
      directUid: host.isRoot ? sandboxUid : undefined,
    });
  };

  /** The plan of one execution in `tier`. */
  const buildFor = async (
    tier: LinuxTierId,
    caps: SandboxCapabilities,
    cwd: string,
    workspace: string,
    sessionKey: string | undefined,
  ): Promise<LinuxProfile> => {
    const notEnforced = await gapsOf(tier);
    const facts = await hostFacts();
    // What every plan of the tier is built from (only when one is built: a cached plan needs none of it).
    const common = () => ({
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
        homeRoot === undefined || sessionKey === undefined ? undefined : path.join(homeRoot, sessionKey),
      // A root host's helper makes /dev where it can make device nodes, else bwrap binds the host's.
      devInHelper: facts.mknod,
      networkKey: createHash('sha256')
        .update(`${workspace}\0${sessionKey ?? ''}`)
        .digest('hex')
        .slice(0, 32),
      maxPids,
      maxOpenFiles,
      maxFileMb: options.maxFileMb,
      tmpfsSizeMb: options.tmpfsSizeMb,
      cpuQuotaPercent: options.cpuQuotaPercent,
      tier,
      notEnforced,
    });
    if (tier === 'direct') {
      return buildDirectProfile(caps, cwd, workspace, {
        ...common(),
        proxySocket: undefined,
        landlockAbi: facts.landlockAbi,
        tmpDir: path.join(stateDir, 'tmp', sessionKey ?? 'preflight'),
      });
    }
    const proxySocket = caps.network.kind === 'allowHosts' ? pool.socketPath(caps.network.hosts) : undefined;
    // A plan is a pure function of its inputs and of what it read of the filesystem: reused while the
    // filesystem still gives the same answers (re-asked each time, so a new .git or a vanished grant counts).
    const key = JSON.stringify([tier, caps, cwd, workspace, sessionKey, proxySocket, notEnforced]);
    const cached = plans.get(key);
    if (cached !== undefined && stillAnswers(cached.queries)) return cached.profile;
    const view = new RecordingView();
    const profile = buildLinuxProfile(caps, cwd, workspace, {
      ...common(),
      proxySocket,
      privileged: tier === 'namespaces',
      ...(tier === 'user-namespace' && host.isRoot ? { innerUid: sandboxUid ?? DEFAULT_SANDBOX_UID } : {}),
      fs: view,
    });
    plans.delete(key);
    plans.set(key, { profile, queries: view.queries });
    if (plans.size > 64) plans.delete(plans.keys().next().value as string);
    return profile;
  };

  /** Runs `true` through `tier`, exactly as a command would run. */
  const tryTier = async (tier: LinuxTierId): Promise<{ ok: boolean; detail: string }> => {
    const ws = mkdtempSync(path.join(os.tmpdir(), 'aleph-preflight-'));
    try {
      const caps = strictCapabilities();
      const profile = await buildFor(tier, caps, ws, ws, undefined);
      const out = await driver.run({
        sessionId: 'aleph-preflight',
        workspace: ws,
        program: 'true',
        args: [],
        env: {},
        cwd: ws,
        capabilities: caps,
        profile,
        timeoutMs: 15_000,
        maxOutputBytes: 64 * 1024,
      });
      if (out.exitCode === 0) return { ok: true, detail: 'ran a sandboxed `true`' };
      return {
        ok: false,
        detail: `\`true\` ended with ${out.exitCode ?? out.signal}: ${out.stderrText.trim() || '(no message)'}`,
      };
    } catch (error) {
      return { ok: false, detail: (error as Error).message };
    } finally {
      rmSync(ws, { recursive: true, force: true });
    }
  };

  const select = (): Promise<TierSelection> => {
    selection ??= selectTier(
      JSON.stringify([
        helperPath,
        options.bwrapPath ?? 'bwrap',
        minimumTier,
        host.uid,
        stateDir,
        sandboxUid,
        uidRange,
      ]),
      candidateTiers(host.isRoot, minimumTier),
      minimumTier,
      tryTier,
    );
    return selection;
  };

  const probe = (): Promise<LinuxProbe> => {
    probed ??= (async () => {
      const base = await probeLinux({
        host,
        bwrap: options.bwrapPath ?? 'bwrap',
        helperPath,
        landlock,
        cgroup: (await hostFacts()).cgroup,
        ...(sandboxUid === undefined ? {} : { sandboxUid }),
        maxFileMb: options.maxFileMb,
        cpuQuotaPercent: options.cpuQuotaPercent,
      });
      const chosen = await select();
      return withTiers(base, chosen, chosen.tier === undefined ? [] : await gapsOf(chosen.tier), host.isRoot);
    })();
    return probed;
  };

  const profileFor = async (
    caps: SandboxCapabilities,
    cwd: string,
    context: ProfileContext,
  ): Promise<LinuxProfile> => {
    const chosen = await select();
    if (chosen.tier === undefined) {
      // No helper fits this machine: that, not a tier, is what to fix (ALEPH_HELPER_MISSING).
      const helper = checkHelperSync(helperPath);
      if (!helper.ok && helper.code !== undefined) {
        throw new DriverError(
          helper.code,
          'linux',
          `the Linux sandbox cannot run here: ${helper.problem}; fix: ${helper.fix}`,
          { details: { attempts: chosen.attempts } },
        );
      }
      const tried = chosen.attempts.map(
        (a) => `tier ${linuxTier(a.tier).number}: ${a.detail}${a.fix ? ` (fix: ${a.fix})` : ''}`,
      );
      throw new DriverError(
        'ALEPH_DRIVER_UNAVAILABLE',
        'linux',
        `the Linux sandbox cannot run here: no tier at least as strong as minimum_tier = ${minimumTier} ran a sandboxed \`true\`; ${tried.join('; ')}`,
        { details: { attempts: chosen.attempts } },
      );
    }
    return buildFor(chosen.tier, caps, cwd, context.workspace, sessionKeyToFilename(context.sessionId));
  };

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
      const profile = request.profile as LinuxProfile;
      const direct = profile.tier === 'direct';
      if (ready === undefined || (ready.bwrapPath === '' && !direct)) {
        const bwrapPath = which(options.bwrapPath ?? 'bwrap');
        const problems: string[] = [];
        if (bwrapPath === null && !direct)
          problems.push('bubblewrap: bwrap not found on PATH; fix: apt-get install -y bubblewrap');
        const helper = checkHelperSync(helperPath);
        if (!helper.ok) problems.push(`helper: ${helper.problem}; fix: ${helper.fix}`);
        if (hostSeccompArch() === undefined)
          problems.push(`architecture: ${process.arch} has no seccomp tables here`);
        if (problems.length > 0) {
          throw new DriverError(
            // No helper fits this machine: ALEPH_HELPER_MISSING, whose fix builds one.
            !helper.ok && helper.code !== undefined ? helper.code : 'ALEPH_DRIVER_UNAVAILABLE',
            'linux',
            `the Linux sandbox cannot run here: ${problems.join('; ')}`,
            {
              details: { problems },
            },
          );
        }
        // The cgroup its check used, when the check worked; rlimits otherwise (probe() says why).
        cgroups = (await hostFacts()).manager;
        ready = { bwrapPath: bwrapPath ?? '', tier: cgroups === undefined ? 'rlimits' : 'cgroup v2' };
      }
      const p = ready;
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

      if (direct) loopbackPool ??= new ProxyPool({ ...poolOptions, transport: { kind: 'loopback' } });
      const lease =
        request.capabilities.network.kind === 'allowHosts'
          ? await (direct ? (loopbackPool as ProxyPool) : pool).acquire(request.capabilities.network.hosts)
          : undefined;
      const tmpDir = direct ? (profile.tmpDir as string) : undefined;
      let leaf: string | undefined;
      let reportFile: string | undefined;
      try {
        // The command's environment goes to the helper on a pipe and is set only at its final execve.
        const env: Record<string, string> = {
          PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
          ...pickEnv(envAllowlist),
          ...(profile.home === null
            ? { HOME: request.workspace }
            : Object.fromEntries(
                Object.entries(sessionHomeEnv()).map(([k, v]) => [
                  k,
                  (profile.home as { inner: string }).inner + v.slice(INNER_HOME.length),
                ]),
              )),
          TMPDIR: tmpDir ?? '/tmp',
          ...request.env,
        };
        if (tmpDir !== undefined) {
          mkdirSync(tmpDir, { recursive: true, mode: 0o700 });
          privateTmps.set(tmpDir, (privateTmps.get(tmpDir) ?? 0) + 1);
        }
        const proxyPort = lease === undefined ? undefined : lease.proxy.address?.port;
        if (lease !== undefined)
          Object.assign(
            env,
            direct ? lease.proxy.env() : lease.proxy.env({ host: '127.0.0.1', port: BRIDGE_PORT }),
          );
        // RLIMIT_NPROC counts every process of the uid, so a shared uid's budget is on top of what it
        // already runs; a uid of the command's own starts from nothing.
        const sharedUid = !host.isRoot
          ? host.uid
          : profile.identity.mode === 'drop-to-uid' && typeof profile.identity.uid === 'number'
            ? profile.identity.uid
            : undefined;
        const nproc = profile.limits.maxPids + (sharedUid === undefined ? 0 : processesOf(sharedUid));
        const args = direct
          ? [
              helperPath,
              '--direct',
              ...profile.helperArgs.map((a) => (a === PROXY_PORT_ARG ? String(proxyPort) : a)),
              '--',
            ]
          : [p.bwrapPath, ...profile.bwrapArgs];
        // Both end in the helper's `--`: the process limit is one of its options.
        args.splice(args.length - 1, 0, '--rlimit', `NPROC=${nproc}`);
        args.push(request.program, ...request.args);

        const launch = [...profile.launch];
        // Written only when the sweep has something to say, under a name of this run's own.
        reportFile = path.join(stateDir, `${reportPrefix}-${++runs}`);
        launch.push('--report', reportFile);
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
          args: ['--launch', ...launch, '--', ...args],
          env: HOST_SIDE_ENV,
          cwd: '/',
          gracefulStop: { signal: 'SIGTERM', graceMs: 2000 },
          ...(request.stdin === undefined ? {} : { stdin: request.stdin }),
          timeoutMs: request.timeoutMs,
          maxOutputBytes: request.maxOutputBytes,
          extraFds: [seccompBytes(profile), encodeEnv(env)],
          ...(forkServer === undefined ? {} : { starter: forkServer.start }),
          ...(request.signal === undefined ? {} : { signal: request.signal }),
          ...(request.onStdout === undefined ? {} : { onStdout: request.onStdout }),
          ...(request.onStderr === undefined ? {} : { onStderr: request.onStderr }),
        });
        return launchOutput(result, profile, {
          limits: p.tier,
          reportFile,
          // What the tier leaves open, then what the limits leave unbounded.
          notEnforced: [
            ...profile.notEnforced,
            ...linuxNotEnforced({
              cgroup: cgroups !== undefined,
              isRoot: host.isRoot,
              uid: host.isRoot ? (sandboxUid ?? 'per-run') : host.uid,
              maxFileMb:
                profile.limits.rlimits.FSIZE === undefined
                  ? undefined
                  : profile.limits.rlimits.FSIZE / (1024 * 1024),
              cpuQuota: profile.limits.cpuQuotaPercent !== null,
            }),
          ],
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
        if (reportFile !== undefined && existsSync(reportFile)) rmSync(reportFile, { force: true });
        lease?.release();
        if (leaf !== undefined) await cgroups?.destroyLeaf(leaf);
        if (tmpDir !== undefined) {
          const users = (privateTmps.get(tmpDir) ?? 1) - 1;
          if (users > 0) privateTmps.set(tmpDir, users);
          else {
            privateTmps.delete(tmpDir);
            rmSync(tmpDir, { recursive: true, force: true });
          }
        }
      }
    },

    async dispose(): Promise<void> {
      disposed = true;
      await Promise.all([pool.dispose(), loopbackPool?.dispose(), forkServer?.dispose()]);
    },
  });
  return driver;
}
