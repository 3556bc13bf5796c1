/**
 * The driver's plans: the inputs every plan of a tier is built from, and the plan cache. A plan is a pure
 * function of its inputs and of what it read of the filesystem, so it is reused while the filesystem still
 * gives the same answers.
 */
import { createHash } from 'node:crypto';
import path from 'node:path';
import { refuseHiddenGrants, type SandboxCapabilities } from '@aleph/sandbox-core';
import { onGvisor } from '../host/host-traits.js';
import { RecordingView, stillAnswers } from '../mounts/fs-view.js';
import { DEFAULT_SANDBOX_UID } from '../options.js';
import { buildLinuxProfile } from '../profile/build-profile.js';
import { buildDirectProfile } from '../profile/direct-profile.js';
import { type NamespaceLimits, pidMaxFor } from '../profile/ns-limits.js';
import type { LinuxProfile, ProfileInputs } from '../profile/profile-types.js';
import type { ProxyPools } from '../run/proxy-pools.js';
import type { LinuxTierId } from '../tiers/tiers.js';
import type { DriverSettings } from './driver-settings.js';
import { gapsOf, type MechanismFacts } from './mechanism-facts.js';

type Queries = RecordingView['queries'];

/** Builds (or reuses) the plan of one execution in a tier. */
export class PlanBuilder {
  /** Tier 2 plans bind this host's /proc (the preflight found a fresh procfs refused: `ProfileInputs.hostProc`). */
  hostProc = false;
  readonly #plans = new Map<string, { profile: LinuxProfile; queries: Queries }>();
  /** A cached plan's seccomp program, decoded once. */
  readonly #programs = new WeakMap<LinuxProfile, Buffer>();
  readonly #trappedPrograms = new WeakMap<LinuxProfile, Buffer>();
  /** Tier 2's namespaces are the launcher's where bwrap cannot make them (`ProfileInputs.outerNamespaces`). */
  readonly #outerNamespaces = onGvisor() === 'from-2023-11';

  constructor(
    readonly settings: DriverSettings,
    readonly facts: () => Promise<MechanismFacts>,
    readonly pools: ProxyPools,
    /** Where each session's scratch space is (its /tmp, or tier 3's TMPDIR). */
    readonly sessionTmpFor: (sessionKey: string) => string,
  ) {}

  /** The plan of one execution in `tier`. */
  async build(
    tier: LinuxTierId,
    caps: SandboxCapabilities,
    cwd: string,
    workspace: string,
    sessionKey: string | undefined,
    hostProc = this.hostProc && tier === 'user-namespace',
  ): Promise<LinuxProfile> {
    // A cached plan too: a grant inside a hidden path is refused whatever was built before.
    refuseHiddenGrants(caps, this.settings.hiddenPaths);
    const facts = await this.facts();
    const notEnforced = gapsOf(this.settings, facts, tier, hostProc);
    const inputs = () => this.#inputs(tier, notEnforced, facts, workspace, sessionKey);
    if (tier === 'direct') {
      return buildDirectProfile(caps, cwd, workspace, {
        ...inputs(),
        proxySocket: undefined,
        landlockAbi: facts.landlockAbi,
        tmpDir: this.sessionTmpFor(sessionKey ?? 'preflight'),
      });
    }
    // No network is an empty allowlist on the proxy: every attempt is refused, and recorded.
    const proxySocket =
      caps.network.kind === 'allowHosts'
        ? this.pools.socketPath(caps.network.hosts)
        : caps.network.kind === 'none'
          ? this.pools.socketPath([])
          : undefined;
    // Reused while the filesystem still gives the same answers (re-asked each time, so a new .git or a
    // vanished grant counts).
    const key = JSON.stringify([tier, caps, cwd, workspace, sessionKey, proxySocket, notEnforced]);
    const cached = this.#plans.get(key);
    if (cached !== undefined && stillAnswers(cached.queries)) return cached.profile;
    const view = new RecordingView();
    const profile = buildLinuxProfile(caps, cwd, workspace, {
      ...inputs(),
      proxySocket,
      privileged: tier === 'namespaces',
      hostProc,
      ...(tier === 'user-namespace' && this.#outerNamespaces ? { outerNamespaces: true } : {}),
      ...(tier === 'user-namespace' && this.settings.host.isRoot && !this.#outerNamespaces
        ? { innerUid: this.settings.sandboxUid ?? DEFAULT_SANDBOX_UID }
        : {}),
      fs: view,
    });
    this.#remember(key, profile, view.queries);
    return profile;
  }

  /**
   * A plan's seccomp program as bytes (decoded once per plan); `trapsSpawn`: its program without the spawn
   * denial (the change recording's trapping filter carries it), which a profile denying spawn has.
   */
  readonly seccompBytes = (profile: LinuxProfile, trapsSpawn: boolean): Buffer => {
    const cache = trapsSpawn ? this.#trappedPrograms : this.#programs;
    let bytes = cache.get(profile);
    if (bytes === undefined) {
      const program = trapsSpawn ? profile.seccomp.spawnTrappedProgram : profile.seccomp.program;
      if (program === undefined) throw new Error('the profile has no program for a trapped spawn denial');
      bytes = Buffer.from(program, 'base64');
      cache.set(profile, bytes);
    }
    return bytes;
  };

  /** The 64 most recently built plans. */
  #remember(key: string, profile: LinuxProfile, queries: Queries): void {
    this.#plans.delete(key);
    this.#plans.set(key, { profile, queries });
    if (this.#plans.size > 64) this.#plans.delete(this.#plans.keys().next().value as string);
  }

  /** What every plan of the tier is built from (only when one is built: a cached plan needs none of it). */
  #inputs(
    tier: LinuxTierId,
    notEnforced: readonly string[],
    facts: MechanismFacts,
    workspace: string,
    sessionKey: string | undefined,
  ): Omit<ProfileInputs, 'proxySocket'> {
    const s = this.settings;
    return {
      host: s.host,
      arch: s.arch,
      helperPath: s.helperPath,
      landlock: s.landlock,
      protectedPaths: s.protectedPaths,
      homeProtectedPaths: s.homeProtectedPaths,
      vaultPaths: s.vaultPaths,
      hiddenPaths: s.hiddenPaths,
      sandboxUid: s.sandboxUid,
      sandboxGid: s.sandboxGid,
      uidRange: s.uidRange,
      stateDir: s.stateDir,
      sessionHome:
        s.homeRoot === undefined || sessionKey === undefined ? undefined : path.join(s.homeRoot, sessionKey),
      sessionTmp: sessionKey === undefined ? undefined : this.sessionTmpFor(sessionKey),
      // A root host's helper makes /dev where it can make device nodes, else bwrap binds the host's.
      devInHelper: facts.mknod,
      // Without root, the fork server's change watcher (marks kept between its runs) stands in for the journal.
      journal: s.changeJournal && (facts.journal || (facts.watch && s.forkServer)),
      journalKind: facts.journal ? 'journal' : 'watch',
      quarantineDir: sessionKey === undefined ? undefined : path.join(s.quarantineRoot, sessionKey),
      networkKey: createHash('sha256')
        .update(`${workspace}\0${sessionKey ?? ''}`)
        .digest('hex')
        .slice(0, 32),
      maxPids: s.maxPids,
      maxOpenFiles: s.maxOpenFiles,
      maxFileMb: s.maxFileMb,
      tmpfsSizeMb: s.tmpfsSizeMb,
      cpuQuotaPercent: s.cpuQuotaPercent,
      tier,
      notEnforced,
      ...(tier === 'user-namespace' ? { nsLimits: namespaceLimits(facts, s.maxPids) } : {}),
      network: s.network,
    };
  }
}

/** Tier 2's namespace limits where this host allows them (`ns-limits.ts`). */
function namespaceLimits(facts: MechanismFacts, maxPids: number): NamespaceLimits {
  return { pidMax: facts.nsLimits.pidMax ? pidMaxFor(maxPids) : undefined, userns: facts.nsLimits.userns };
}
