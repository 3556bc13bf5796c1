/**
 * The driver folder: `createLinuxDriver`, which puts the rest together. Its steps, in the order a driver
 * uses them: the settings (`driver-settings.ts`), what the host's mechanisms showed
 * (`mechanism-facts.ts`), the plans and their cache (`plan-builder.ts`), the tier choice
 * (`tier-choice.ts`), the runs (`../run/run-command.ts`), the file calls (`../files/`), and dispose.
 */
import { randomBytes } from 'node:crypto';
import {
  type DriverCapabilityId,
  defineDriver,
  type OsSandboxDriver,
  type ProfileContext,
  type SandboxCapabilities,
  type SessionId,
  sessionKeyToFilename,
} from '@aleph/sandbox-core';
import type { KeptRun } from '../changes/change-store.js';
import { SessionHistory } from '../changes/session-history.js';
import {
  type ChangesRequest,
  listChanges,
  type UndoRequest,
  type UndoResult,
  undoRun,
} from '../changes/undo.js';
import { linuxDriverFiles } from '../files/driver-files.js';
import { type LinuxProbe, probeLinux } from '../host/probe.js';
import type { LinuxDriverOptions } from '../options.js';
import type { LinuxProfile } from '../profile/profile-types.js';
import { createForkServer } from '../run/fork-server.js';
import { ProxyPools } from '../run/proxy-pools.js';
import { CommandRunner } from '../run/run-command.js';
import { SessionTmps } from '../run/session-tmp.js';
import { withTiers } from '../tiers/with-tiers.js';
import { ChoiceCache } from './choice-cache.js';
import { type DriverSettings, resolveSettings } from './driver-settings.js';
import { gapsOf, type MechanismFacts, mechanismFacts } from './mechanism-facts.js';
import { PlanBuilder } from './plan-builder.js';
import { runRevalidating } from './revalidate.js';
import { TierChoice, usesHostProc } from './tier-choice.js';

/** Everything the Linux driver can enforce. */
export const LINUX_CAPABILITIES: readonly DriverCapabilityId[] = [
  'exec',
  'exec.stdin-stream',
  'files',
  'fs.confine',
  'fs.read',
  'fs.write',
  'fs.protected-paths',
  'net.none',
  'net.allowlist',
  'net.all',
  'net.publish',
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
  /** Takes back run `runId` (`details.runId`): see `UndoResult`. */
  undo(request: UndoRequest): Promise<UndoResult>;
  /** The change sets kept in the driver's store (newest first), or one run's. */
  changes(request: ChangesRequest): Promise<readonly KeptRun[]>;
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
  const settings = resolveSettings(options);
  const forkServer = settings.forkServer
    ? createForkServer(settings.helperPath, settings.stateDir)
    : undefined;
  const pools = new ProxyPools(settings.poolOptions, settings.host.isRoot);
  const facts = mechanismFacts(settings);
  // Each session's /tmp (tier 3: TMPDIR), kept until the session ends; those of a crashed process pruned.
  const sessionTmps = new SessionTmps(settings.stateDir, settings.host.isRoot);
  sessionTmps.prune();
  const history = new SessionHistory(settings.stateDir, settings.changes.keepOnDispose);
  const plans = new PlanBuilder(settings, facts, pools, (key) => sessionTmps.dirFor(key));
  // Report names no other driver instance (or an earlier process of this pid) can have used.
  const runner = new CommandRunner(
    settings,
    {
      pools,
      forkServer,
      cgroupManager: async () => (await facts()).manager,
      changesProbe: async () => (await facts()).changes,
      seccompBytes: plans.seccompBytes,
      landlockAbi: async () => (await facts()).landlockAbi,
      sessionTmps,
      history,
    },
    `report-${process.pid}-${randomBytes(4).toString('hex')}`,
  );
  const cache = settings.hostCache === 'off' ? undefined : new ChoiceCache(settings, settings.hostCache);
  const tiers = new TierChoice(settings, plans, facts, (request) => driver.run(request), cache);
  let probed: Promise<LinuxProbe> | undefined;

  const driver: LinuxDriver = defineDriver({
    name: 'linux' as const,
    capabilities: LINUX_CAPABILITIES,
    hiddenPaths: settings.hiddenPaths,
    probe: () => {
      probed ??= probeWithTiers(settings, facts, tiers);
      return probed;
    },
    profileFor: (caps: SandboxCapabilities, cwd: string, context: ProfileContext) =>
      tiers.profileFor(caps, cwd, context),
    run: (request) => runRevalidating(request, runner, tiers, plans),
    files: () => linuxDriverFiles(settings),
    async closeSession(sessionId: SessionId): Promise<void> {
      try {
        sessionTmps.close(sessionKeyToFilename(sessionId));
      } catch {}
      history.close(sessionId);
    },
    undo: async (request: UndoRequest) => undoRun(settings.stateDir, settings.helperPath, request),
    changes: async (request: ChangesRequest) => listChanges(settings.stateDir, request),
    async dispose(): Promise<void> {
      runner.dispose();
      await Promise.all([pools.dispose(), forkServer?.dispose()]);
      try {
        sessionTmps.dispose();
      } catch {}
      history.dispose();
    },
  });
  return driver;
}

/** The probe, with the preflight's verdict folded in (`withTiers`). */
async function probeWithTiers(
  settings: DriverSettings,
  facts: () => Promise<MechanismFacts>,
  tiers: TierChoice,
): Promise<LinuxProbe> {
  const base = await probeLinux({
    host: settings.host,
    bwrap: settings.bwrap,
    helperPath: settings.helperPath,
    landlock: settings.landlock,
    cgroup: (await facts()).cgroup,
    ...(settings.sandboxUid === undefined ? {} : { sandboxUid: settings.sandboxUid }),
    maxFileMb: settings.maxFileMb,
    cpuQuotaPercent: settings.cpuQuotaPercent,
    changes: settings.changes.enabled,
  });
  const chosen = await tiers.select();
  const gaps =
    chosen.tier === undefined ? [] : gapsOf(settings, await facts(), chosen.tier, usesHostProc(chosen));
  return withTiers(base, chosen, gaps, settings.host.isRoot);
}
