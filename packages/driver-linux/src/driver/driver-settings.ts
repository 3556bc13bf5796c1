/**
 * The driver's settings: `LinuxDriverOptions` resolved once, with their defaults and this host's facts,
 * into the values every plan and run uses.
 */
import { existsSync, readlinkSync } from 'node:fs';
import path from 'node:path';
import type { ProxyPoolOptions } from '@aleph/proxy/pool';
import {
  DEFAULT_ENV_ALLOWLIST,
  DEFAULT_HOME_PROTECTED_PATHS,
  defaultVaultPaths,
  type HiddenPath,
  hiddenPaths,
  resolveProtectedPaths,
} from '@aleph/sandbox-core';
import { type ChangesOptions, DEFAULT_CHANGES } from '../changes/change-store.js';
import { resolveHelperPath } from '../host/helper-path.js';
import { type HostFacts, readHostFacts } from '../host/host-facts.js';
import { DEFAULT_MAX_PIDS, DEFAULT_SANDBOX_UID_RANGE, type LinuxDriverOptions } from '../options.js';
import { findHostTrust } from '../profile/host-trust.js';
import { defaultMaxOpenFiles, readFileMax, readOpenFilesHardLimit } from '../profile/limits.js';
import type { NetworkInputs } from '../profile/network-plan.js';
import type { SeccompArch } from '../seccomp/bpf.js';
import { hostSeccompArch } from '../seccomp/seccomp-program.js';
import type { LinuxTierNumber } from '../tiers/tiers.js';
import {
  type QuarantineBudget,
  quarantineBudget,
  quarantineRoot as quarantineRootOf,
} from './quarantine-layout.js';

/** Everything a driver instance was configured with, defaults applied. */
export interface DriverSettings {
  readonly host: HostFacts;
  readonly arch: SeccompArch;
  readonly helperPath: string;
  /** bubblewrap as configured (a path, or a name looked up on PATH). */
  readonly bwrap: string;
  readonly landlock: 'best-effort' | 'required';
  readonly sandboxUid: number | undefined;
  /** Change recording (issue 38): on by default, with the session's budgets. */
  readonly changes: ChangesOptions;
  readonly sandboxGid: number | undefined;
  readonly uidRange: readonly [number, number];
  /** Where sessions' HOMEs live on the host; `undefined` when HOME is the workspace. */
  readonly homeRoot: string | undefined;
  readonly stateDir: string;
  /** Where each session's quarantine lives (`<quarantineRoot>/<session key>`). */
  readonly quarantineRoot: string;
  /** What the quarantine may cost the host per run and per session. */
  readonly quarantineBudget: QuarantineBudget;
  readonly allowLoaderEnv: readonly string[];
  readonly maxPids: number;
  readonly maxOpenFiles: number;
  readonly maxFileMb: number | undefined;
  readonly tmpfsSizeMb: number | undefined;
  readonly cpuQuotaPercent: number | undefined;
  readonly protectedPaths: readonly string[];
  readonly homeProtectedPaths: readonly string[];
  /**
   * Never visible, whatever is granted: the vault, the audit log (or its directory), every session's HOME
   * (each session sees only its own, at /run/aleph/home), the state directory and the quarantine. A grant
   * containing one hides it; a grant inside one is refused (`hiddenPaths`).
   */
  readonly vaultPaths: readonly string[];
  /** The same paths with what each is, for the refusal of a grant inside one. */
  readonly hiddenPaths: readonly HiddenPath[];
  readonly envAllowlist: readonly string[];
  /** The managed proxies' settings (their transport is the pool's own). */
  readonly poolOptions: Omit<ProxyPoolOptions, 'transport'>;
  /** The resolver's and transparent egress's settings. */
  readonly network: NetworkInputs;
  readonly minimumTier: LinuxTierNumber;
  readonly cgroupRoot: string | undefined;
  /** Start launchers through the fork server. */
  readonly forkServer: boolean;
  /** How the host cache is used (`LinuxDriverOptions.hostCache`). */
  readonly hostCache: 'use' | 'refresh' | 'off';
  /** Use the change journal where the helper can keep one (else the complete walk). */
  readonly changeJournal: boolean;
}

/**
 * Where `file` really is: the end of its chain of symlinks, resolved as text (the target need not exist:
 * systemd-resolved's /etc/resolv.conf points into /run), at most 8 links; `file` itself when it is none.
 */
export function linkTarget(file: string): string {
  let at = file;
  for (let hops = 0; hops < 8; hops++) {
    let target: string;
    try {
      target = readlinkSync(at);
    } catch {
      return at;
    }
    at = path.resolve(path.dirname(at), target);
  }
  return at;
}

/** Resolves `options` against their defaults and this host. */
export function resolveSettings(options: LinuxDriverOptions): DriverSettings {
  const host = readHostFacts();
  const homeRoot =
    options.homeRoot === false ? undefined : (options.homeRoot ?? path.join(host.home, '.aleph', 'homes'));
  const maxPids = options.maxPids ?? DEFAULT_MAX_PIDS;
  const protectedPaths = resolveProtectedPaths(options);
  const stateDir = options.stateDir ?? path.join(host.home, '.aleph', 'run');
  // Beside the default state directory; inside one of the caller's own, so a test's stays its own.
  const quarantineRoot = quarantineRootOf({
    home: host.home,
    stateDir: options.stateDir,
    quarantineRoot: options.quarantineRoot,
  });
  const hidden = hiddenPaths({
    home: host.home,
    // The quarantine holds what commands planted: no grant may reach it.
    vaultPaths: [...(options.vaultPaths ?? defaultVaultPaths(host.home)), quarantineRoot],
    homeRoot,
    auditLogPath: options.auditLogPath,
    stateDir,
  });
  return {
    host,
    arch: hostSeccompArch() ?? 'x86_64',
    helperPath: options.helperPath ?? resolveHelperPath(),
    bwrap: options.bwrapPath ?? 'bwrap',
    landlock: options.landlock ?? 'best-effort',
    sandboxUid: options.sandboxUid,
    changes: { ...DEFAULT_CHANGES, ...options.changes },
    sandboxGid: options.sandboxGid ?? options.sandboxUid,
    uidRange: options.sandboxUidRange ?? DEFAULT_SANDBOX_UID_RANGE,
    homeRoot,
    stateDir,
    quarantineRoot,
    quarantineBudget: quarantineBudget(options.quarantineBudget),
    allowLoaderEnv: options.allowLoaderEnv ?? [],
    maxPids,
    maxOpenFiles:
      options.maxOpenFiles ??
      defaultMaxOpenFiles({ maxPids, fileMax: readFileMax(), hardLimit: readOpenFilesHardLimit() }),
    maxFileMb: options.maxFileMb,
    tmpfsSizeMb: options.tmpfsSizeMb,
    cpuQuotaPercent: options.cpuQuotaPercent,
    protectedPaths,
    homeProtectedPaths: options.homeProtectedPaths ?? DEFAULT_HOME_PROTECTED_PATHS,
    vaultPaths: hidden.map((h) => h.path),
    hiddenPaths: hidden,
    envAllowlist: options.envAllowlist ?? DEFAULT_ENV_ALLOWLIST,
    poolOptions: {
      ...(options.proxy?.deny === undefined ? {} : { deny: options.proxy.deny }),
      ...(options.proxy?.resolver === undefined ? {} : { resolver: options.proxy.resolver }),
      ...(options.proxy?.idleMs === undefined ? {} : { idleMs: options.proxy.idleMs }),
      ...(options.proxy?.parent === undefined ? {} : { parent: options.proxy.parent }),
    },
    network: {
      egressPorts: options.proxy?.egressPorts,
      proxyDeny: options.proxy?.deny,
      resolvConfPath: linkTarget('/etc/resolv.conf'),
      hostsPath: existsSync('/etc/hosts') ? linkTarget('/etc/hosts') : undefined,
      trust: findHostTrust(
        process.env,
        host.home,
        hidden.map((h) => h.path),
      ),
    },
    minimumTier: options.minimumTier ?? 3,
    cgroupRoot: options.cgroupRoot,
    forkServer: options.forkServer !== false,
    hostCache: options.hostCache ?? 'off',
    changeJournal: options.changeJournal !== false,
  };
}
