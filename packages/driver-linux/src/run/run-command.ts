/**
 * The run folder: running one command by its plan. This file is the driver's `run`: check once that the
 * host can run it, prepare the host side (state directory, session HOME, proxy lease, private TMPDIR),
 * build the environment and the launcher's argv, make the cgroup leaf, start the launcher (through the
 * fork server), read the outcome, and clean up. The pieces: the fork server (`fork-server*.ts`), the
 * command's environment and argv, the session HOME, the launcher's report and the run's result.
 */
import { existsSync, mkdirSync, rmSync } from 'node:fs';
import { constants as osConstants } from 'node:os';
import path from 'node:path';
import type { ProxyLease } from '@aleph/proxy/pool';
import {
  type BoundedRunOptions,
  DriverError,
  type DriverRunRequest,
  InvalidInputError,
  networkDenial,
  runBoundedProcess,
  type SandboxOutput,
  sessionKeyToFilename,
} from '@aleph/sandbox-core';
import type { ChangesOptions, RecordingRun } from '../changes/change-store.js';
import {
  dropRecording,
  recordRun,
  spawnDenials,
  withChanges,
  withHelperArgs,
  writeDenials,
} from '../changes/run-hooks.js';
import type { SessionHistory } from '../changes/session-history.js';
import { type QuarantineBudget, quarantineBudgetArgs } from '../driver/quarantine-layout.js';
import type { CgroupLimits, CgroupManager } from '../host/cgroup.js';
import type { HostFacts } from '../host/host-facts.js';
import { BRIDGE_PORT, HOST_SIDE_ENV } from '../options.js';
import { HOSTS_FILE, RESOLV_CONF } from '../profile/network-plan.js';
import type { LinuxProfile } from '../profile/profile-types.js';
import { linuxNotEnforced } from '../tiers/not-enforced.js';
import { commandArgv } from './command-argv.js';
import { commandEnv, encodeEnv, refuseLoaderEnv } from './command-env.js';
import type { ForkServer } from './fork-server.js';
import { GitIdentitySync } from './git-identity.js';
import { limitDenials, processesSeen, readLeafEvents, watchPidsArgs } from './limit-denials.js';
import type { ProxyPools } from './proxy-pools.js';
import { launchOutput } from './run-result.js';
import { checkRunnable, type Runnable } from './runnable.js';
import { ensureSessionHome } from './session-home.js';
import type { SessionTmps } from './session-tmp.js';

const RESOLV_CONF_BYTES = Buffer.from(RESOLV_CONF);
const HOSTS_BYTES = Buffer.from(HOSTS_FILE);

/** What a run needs of the driver's settings. */
export interface RunSettings {
  readonly host: HostFacts;
  readonly helperPath: string;
  readonly bwrap: string;
  readonly stateDir: string;
  /** Sessions' quarantines are made in it by the launcher (one directory each). */
  readonly quarantineRoot: string;
  /** What each run's copies into the quarantine, and each session's quarantine, may cost the host. */
  readonly quarantineBudget: QuarantineBudget;
  readonly homeRoot: string | undefined;
  readonly allowLoaderEnv: readonly string[];
  readonly envAllowlist: readonly string[];
  readonly sandboxUid: number | undefined;
  /** Change recording (issue 38). */
  readonly changes: ChangesOptions;
}

/** The driver's parts a run uses. */
export interface RunParts {
  readonly pools: ProxyPools;
  readonly forkServer: ForkServer | undefined;
  /** The checked cgroup's manager, once found (none: rlimits). */
  readonly cgroupManager: () => Promise<CgroupManager | undefined>;
  /** What the helper's probe said of change recording (`'ok'`, else why it is unrecorded). */
  readonly changesProbe?: () => Promise<string>;
  /** A plan's seccomp program as bytes. */
  /** The main filter's bytes; `trapsSpawn`: the program without the spawn denial the recording carries. */
  readonly seccompBytes: (profile: LinuxProfile, trapsSpawn: boolean) => Buffer;
  /** The host's Landlock ABI (0: none), as the probe found it: the run names the same gaps as doctor. */
  readonly landlockAbi?: () => Promise<number>;
  /** Each session's scratch space (its /tmp, tier 3's TMPDIR): made before its first run, kept after. */
  readonly sessionTmps: SessionTmps;
  /** The runs whose change sets go when their session ends (`changes.keepOnDispose: false`). */
  readonly history?: SessionHistory;
}

/** Runs commands by their plans, for one driver. */
export class CommandRunner {
  #disposed = false;
  #runnable: Runnable | undefined;
  #cgroups: CgroupManager | undefined;
  #stateReady = false;
  #gitIdentity: GitIdentitySync | undefined;
  #runs = 0;

  constructor(
    readonly settings: RunSettings,
    readonly parts: RunParts,
    /** Report names no other driver instance (or an earlier process of this pid) can have used. */
    readonly reportPrefix: string,
  ) {}

  /** Runs `request` by its plan (`request.profile`). */
  async run(request: DriverRunRequest): Promise<SandboxOutput> {
    if (this.#disposed)
      throw new DriverError('ALEPH_DRIVER_FAILED', 'linux', 'the Linux driver was disposed');
    const profile = request.profile as LinuxProfile;
    const direct = profile.tier === 'direct';
    const runnable = await this.#checkRunnable(direct);
    if (profile.driver !== 'linux' || !Array.isArray(profile.bwrapArgs)) {
      throw new DriverError('ALEPH_DRIVER_FAILED', 'linux', 'the profile was not made by the Linux driver');
    }
    // Checked before anything is created: a refused request leaves the host as it found it.
    refuseLoaderEnv(request.env, this.settings.allowLoaderEnv);
    this.#prepareHost(profile, request);
    const pool = this.parts.pools.forRun(direct);
    const network = request.capabilities.network;
    // No network in tiers 1–2 is an empty allowlist (`refusingAll`): its refusals are recorded too.
    const hosts =
      network.kind === 'allowHosts' ? network.hosts : network.kind === 'none' && !direct ? [] : undefined;
    // The run's own entrance on the shared proxy: its refusals are this run's.
    const lease = hosts === undefined ? undefined : await pool.acquire(hosts, { entrance: true });
    const tmpDir = direct ? (profile.tmpDir as string) : undefined;
    let leaf: string | undefined;
    let reportFile: string | undefined;
    let recording: RecordingRun | undefined;
    try {
      const { env, proxyPort } = this.#environment(profile, request, tmpDir, lease);
      const { host, helperPath } = this.settings;
      const probed = (await this.parts.changesProbe?.()) ?? 'ok';
      recording = recordRun(this.settings.stateDir, this.settings.changes, profile, request, probed);
      const argv = withHelperArgs(
        commandArgv(profile, request, {
          host,
          helperPath,
          bwrapPath: runnable.bwrapPath,
          proxyPort,
          proxySocket: lease?.entrance?.unixPath,
        }),
        recording,
        request,
      );
      // Written only when the sweep has something to say, under a name of this run's own.
      reportFile = path.join(this.settings.stateDir, `${this.reportPrefix}-${++this.#runs}`);
      const launch = [
        ...profile.launch,
        '--report',
        reportFile,
        ...quarantineBudgetArgs(this.settings.quarantineBudget),
        ...(recording?.launchArgs ?? []),
      ];
      leaf = await this.#enterLeaf(profile, request, launch);
      launch.push(...watchPidsArgs(profile, leaf !== undefined));
      const trapsSpawn = recording?.trapsSpawn === true;
      const result = await runBoundedProcess(
        this.#launcherRun(request, profile, { launch, argv, env, trapsSpawn }),
      );
      const refused = (await lease?.entrance?.settle()) ?? [];
      const limited = limitDenials(profile, {
        processesSeen: processesSeen(reportFile, profile, leaf !== undefined),
        leaf: leaf === undefined ? undefined : await readLeafEvents(leaf),
        signal: result.signal ?? bwrapSignal(result.exitCode),
        maxMemoryMb: request.capabilities.maxMemoryMb,
      });
      const output = launchOutput(result, profile, {
        limits: runnable.limits,
        reportFile,
        notEnforced: this.#notEnforced(profile, await this.#landlock(profile)),
        denials: [
          ...refused.map((d) => networkDenial(d, hosts ?? [])),
          ...limited,
          ...spawnDenials(recording),
          ...writeDenials(recording),
        ],
      });
      const withRecord = withChanges(output, recording, request, this.settings.changes, probed);
      this.parts.history?.note(request.sessionId, withRecord.details?.runId);
      recording = undefined;
      return withRecord;
    } catch (error) {
      if (error instanceof DriverError || error instanceof InvalidInputError) throw error;
      throw new DriverError(
        'ALEPH_DRIVER_FAILED',
        'linux',
        `could not run ${request.program}: ${(error as Error).message}`,
        {
          cause: error,
        },
      );
    } finally {
      if (reportFile !== undefined && existsSync(reportFile)) rmSync(reportFile, { force: true });
      dropRecording(recording);
      lease?.release();
      if (leaf !== undefined) await this.#cgroups?.destroyLeaf(leaf);
    }
  }

  /** Checks again on the next run (what it found came from facts now dropped). */
  recheck(): void {
    this.#runnable = undefined;
    this.#cgroups = undefined;
  }

  /** No run starts after this. */
  dispose(): void {
    this.#disposed = true;
  }

  /**
   * The run path checks only what it cannot do without (bwrap, the helper, an architecture with seccomp
   * tables), once, and again for a tier 1–2 run after tier 3 ones; the helper itself enforces a required
   * Landlock, and bwrap reports namespace failures. probe() does the full, slower inspection for doctor.
   */
  async #checkRunnable(direct: boolean): Promise<Runnable> {
    if (this.#runnable === undefined || (this.#runnable.bwrapPath === '' && !direct)) {
      const bwrapPath = checkRunnable(this.settings.bwrap, this.settings.helperPath, direct);
      // The cgroup its check used, when the check worked; rlimits otherwise (probe() says why).
      this.#cgroups = await this.parts.cgroupManager();
      this.#runnable = { bwrapPath, limits: this.#cgroups === undefined ? 'rlimits' : 'cgroup v2' };
    }
    return this.#runnable;
  }

  /** The state directory and the quarantines' (once), and the session's HOME and the user's git identity when the plan has a HOME. */
  #prepareHost(profile: LinuxProfile, request: DriverRunRequest): void {
    const { stateDir, quarantineRoot, homeRoot, host } = this.settings;
    if (!this.#stateReady) {
      mkdirSync(stateDir, { recursive: true, mode: 0o700 });
      mkdirSync(quarantineRoot, { recursive: true, mode: 0o700 });
      this.#stateReady = true;
    }
    const sessionTmp = profile.sessionTmp ?? (profile.tmpDir as string | undefined);
    if (sessionTmp !== undefined) this.parts.sessionTmps.ensure(sessionTmp, profile.sessionTmpMountPoints);
    if (profile.home !== null && homeRoot !== undefined) {
      // The user's git identity as it is now, in a new HOME or the driver's lines of an existing one.
      this.#gitIdentity ??= new GitIdentitySync(host.home);
      const identity = this.#gitIdentity.current();
      const key = sessionKeyToFilename(request.sessionId);
      const home = ensureSessionHome(homeRoot, key, identity);
      if (home.made) this.#gitIdentity.made(key, identity);
      else this.#gitIdentity.refresh(home.dir, key);
    }
  }

  /**
   * The command's environment (`commandEnv`), which goes to the helper on a pipe and is set only at its
   * final execve, with the proxy variables of an allowHosts run.
   */
  #environment(
    profile: LinuxProfile,
    request: DriverRunRequest,
    tmpDir: string | undefined,
    lease: ProxyLease | undefined,
  ): { env: Record<string, string>; proxyPort: number | undefined } {
    const env = commandEnv(profile, request, this.settings.envAllowlist, tmpDir);
    // Tier 3 connects to the run's entrance on loopback; tiers 1–2 to the bridge inside.
    const proxyPort = lease?.entrance?.address?.port;
    // No network has no proxy variables: nothing is reachable through them.
    if (lease !== undefined && request.capabilities.network.kind === 'allowHosts')
      Object.assign(
        env,
        lease.proxy.env(
          profile.tier === 'direct'
            ? { host: '127.0.0.1', port: proxyPort as number }
            : { host: '127.0.0.1', port: BRIDGE_PORT },
        ),
      );
    return { env, proxyPort };
  }

  /** With a delegated cgroup: the run's leaf, which the launcher enters (`--enter-cgroup`). */
  async #enterLeaf(
    profile: LinuxProfile,
    request: DriverRunRequest,
    launch: string[],
  ): Promise<string | undefined> {
    if (this.#cgroups === undefined) return undefined;
    const leaf = await this.#cgroups.createLeaf(leafLimits(profile, request));
    launch.push('--enter-cgroup', leaf);
    return leaf;
  }

  /**
   * The launcher's run: `aleph-sandbox-init --launch LAUNCH -- ARGV`, with the seccomp program and the
   * command's environment on descriptors 3 and 4.
   */
  #launcherRun(
    request: DriverRunRequest,
    profile: LinuxProfile,
    run: {
      readonly launch: readonly string[];
      readonly argv: readonly string[];
      readonly env: Readonly<Record<string, string>>;
      /** The recording's trapping filter refuses process creation: the main filter lets it through. */
      readonly trapsSpawn: boolean;
    },
  ): BoundedRunOptions {
    const { forkServer, seccompBytes } = this.parts;
    const { launch, argv, env } = run;
    return {
      file: this.settings.helperPath,
      args: ['--launch', ...launch, '--', ...argv],
      env: HOST_SIDE_ENV,
      cwd: '/',
      // A soft kill (SIGTERM/SIGINT) goes to the sandboxed processes, not to bwrap, whose death would
      // take them all down at once.
      gracefulStop: { signal: 'SIGTERM', graceMs: 2000, relays: ['bwrap'] },
      ...(request.stdin === undefined ? {} : { stdin: request.stdin }),
      timeoutMs: request.timeoutMs,
      maxOutputBytes: request.maxOutputBytes,
      // 3: the seccomp program, 4: the environment, 5 and 6: the resolv.conf and hosts file bwrap mounts
      // (allowHosts).
      extraFds: [
        seccompBytes(profile, run.trapsSpawn),
        encodeEnv(env),
        ...(profile.network.resolver === null ? [] : [RESOLV_CONF_BYTES, HOSTS_BYTES]),
      ],
      ...(forkServer === undefined ? {} : { starter: forkServer.start }),
      ...(request.signal === undefined ? {} : { signal: request.signal }),
      ...(request.onStdout === undefined ? {} : { onStdout: request.onStdout }),
      ...(request.onStderr === undefined ? {} : { onStderr: request.onStderr }),
    };
  }

  /** Whether Landlock is there, for a plan that runs under bubblewrap; unknown for tier 3 (no bwrap mounts). */
  async #landlock(profile: LinuxProfile): Promise<boolean | undefined> {
    if (profile.tier === 'direct' || this.parts.landlockAbi === undefined) return undefined;
    return (await this.parts.landlockAbi()) > 0;
  }

  /** What the tier leaves open, then what the limits leave unbounded. */
  #notEnforced(profile: LinuxProfile, landlock: boolean | undefined): string[] {
    const { host, sandboxUid } = this.settings;
    return [
      ...profile.notEnforced,
      ...linuxNotEnforced({
        cgroup: this.#cgroups !== undefined,
        isRoot: host.isRoot,
        uid: host.isRoot ? (sandboxUid ?? 'per-run') : host.uid,
        maxFileMb:
          profile.limits.rlimits.FSIZE === undefined
            ? undefined
            : profile.limits.rlimits.FSIZE / (1024 * 1024),
        cpuQuota: profile.limits.cpuQuotaPercent !== null,
        usernsLimits: Object.keys(profile.limits.userns ?? {}).length > 0,
        ownUserNamespace: profile.tier === 'user-namespace' && !host.isRoot,
        ...(landlock === undefined ? {} : { landlock }),
      }),
    ];
  }
}

/** The signal of a program bwrap (or a shell) reports as exit status 128+N, as `launchOutput` reads it. */
function bwrapSignal(exitCode: number | null): string | null {
  if (exitCode === null || exitCode <= 128 || exitCode > 128 + 64) return null;
  return Object.entries(osConstants.signals).find(([, n]) => n === exitCode - 128)?.[0] ?? null;
}

/** The cgroup leaf's limits: the plan's process limit and CPU quota, the command's memory. */
function leafLimits(profile: LinuxProfile, request: DriverRunRequest): CgroupLimits {
  return {
    pidsMax: profile.limits.maxPids,
    ...(request.capabilities.maxMemoryMb === undefined
      ? {}
      : { memoryMaxBytes: request.capabilities.maxMemoryMb * 1024 * 1024 }),
    ...(profile.limits.cpuQuotaPercent === null ? {} : { cpuQuotaPercent: profile.limits.cpuQuotaPercent }),
  };
}
