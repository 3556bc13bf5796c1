/**
 * What the driver learns once by using the host's mechanisms (the helper's `--probe`, a delegated
 * cgroup's check), and the gaps of a tier that follow from it.
 */

import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import {
  type CgroupInfo,
  CgroupManager,
  detectCgroup,
  exerciseCgroup,
  launcherRunIn,
} from '../host/cgroup.js';
import { checkHelperSync, type HelperProbeOutput } from '../host/helper-check.js';
import { onGvisor } from '../host/host-traits.js';
import { readUserLimits, usernsLimitsFrom } from '../profile/ns-limits.js';
import { type LinuxTierId, tierGaps } from '../tiers/tiers.js';
import type { DriverSettings } from './driver-settings.js';

const execFileAsync = promisify(execFile);

/** What the gaps of a tier, and the runs' limits, depend on. */
export interface MechanismFacts {
  /** The Landlock ABI, when the helper's --probe enforced a ruleset (else 0). */
  readonly landlockAbi: number;
  /** The helper could make a device node (a root host's helper then makes /dev). */
  readonly mknod: boolean;
  /**
   * Tier 2's namespace limits this host allows (`ns-limits.ts`): pid_max per PID namespace (Linux 6.14+),
   * and the user namespace's own counts, at half the host user's.
   */
  readonly nsLimits: { readonly pidMax: boolean; readonly userns: Readonly<Record<string, number>> };
  /** The launcher can keep a change journal (fanotify) for the check after the run (a root host). */
  readonly journal: boolean;
  /**
   * Where there is no journal (an unprivileged host): the fork server's change watcher can keep fanotify
   * inode marks between runs (watcher/watcher.h), so the check after the run follows what changed.
   */
  readonly watch: boolean;
  /** The helper's change recording worked (`'ok'`), else why not (runs are then unrecorded). */
  readonly changes: string;
  readonly cgroup: CgroupInfo;
  /** The manager of the checked cgroup, which makes the runs' leaves; none when the check failed. */
  readonly manager: CgroupManager | undefined;
}

/** `mechanismFacts`' memo: the facts (found once), which a cached verdict can also seed or reset. */
export interface FactsSource {
  (): Promise<MechanismFacts>;
  /** Use these facts (from the host cache) instead of finding them. */
  seed(facts: CachedFacts): void;
  /** Find them again on the next call (a run failed in a way they could explain). */
  reset(): void;
}

/** The facts as the host cache keeps them (the cgroup manager is made again from its info). */
export type CachedFacts = Omit<MechanismFacts, 'manager'>;

/**
 * What the gaps of a tier depend on, found once per driver (the returned function memoises it) by using
 * each mechanism: the Landlock ABI (when the helper's --probe enforced a ruleset) and a delegated cgroup
 * (a leaf that took limits and a process, `exerciseCgroup`; its manager then makes the runs' leaves).
 */
export function mechanismFacts(settings: DriverSettings): FactsSource {
  let facts: Promise<MechanismFacts> | undefined;
  const source = () => {
    facts ??= findFacts(settings);
    return facts;
  };
  source.seed = (cached: CachedFacts) => {
    facts = Promise.resolve({
      ...cached,
      manager: cached.cgroup.available ? new CgroupManager(cached.cgroup) : undefined,
    });
  };
  source.reset = () => {
    facts = undefined;
  };
  return source;
}

async function findFacts({ helperPath, cgroupRoot }: DriverSettings): Promise<MechanismFacts> {
  let landlockAbi = 0;
  let mknod = false;
  let nsLimits: MechanismFacts['nsLimits'] = { pidMax: false, userns: {} };
  let journal = false;
  let watch = false;
  let changes = 'the helper could not be probed';
  try {
    const said = JSON.parse((await execFileAsync(helperPath, ['--probe'])).stdout) as HelperProbeOutput;
    if (said.landlock === 'ok') landlockAbi = said.landlock_abi;
    mknod = said.mknod === 'ok';
    nsLimits = {
      pidMax: said.pid_max_ns === 'ok',
      userns: said.userns_limits === 'ok' ? usernsLimitsFrom(readUserLimits()) : {},
    };
    journal = said.journal === 'ok';
    watch = said.watch === 'ok';
    changes = said.changes ?? 'the helper predates change recording (build it again)';
  } catch {
    // no helper: every tier fails its preflight and says why
  }
  let cgroup = detectCgroup(cgroupRoot);
  let manager: CgroupManager | undefined;
  if (cgroup.available && checkHelperSync(helperPath).ok) {
    manager = new CgroupManager(cgroup);
    cgroup = await exerciseCgroup(manager, launcherRunIn(helperPath));
  } else if (cgroup.available) {
    cgroup = { ...cgroup, available: false, detail: `${cgroup.detail}; not used: the helper cannot run` };
  }
  return {
    landlockAbi,
    mknod,
    nsLimits,
    journal,
    watch,
    changes,
    cgroup,
    manager: cgroup.available ? manager : undefined,
  };
}

/** What `tier` does not enforce on this host, with this driver's settings. */
export function gapsOf(
  settings: DriverSettings,
  facts: Pick<MechanismFacts, 'cgroup' | 'landlockAbi' | 'nsLimits'>,
  tier: LinuxTierId,
  hostProc = false,
): string[] {
  return tierGaps(tier, {
    hostProc,
    isRoot: settings.host.isRoot,
    cgroup: facts.cgroup.available,
    landlockAbi: facts.landlockAbi,
    directUid: settings.host.isRoot ? settings.sandboxUid : undefined,
    pidNamespaceLimit: facts.nsLimits.pidMax,
    maxPids: settings.maxPids,
    outerNamespaces: onGvisor() === 'from-2023-11',
  });
}
