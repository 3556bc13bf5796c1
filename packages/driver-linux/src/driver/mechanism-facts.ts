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
import { type LinuxTierId, tierGaps } from '../tiers/tiers.js';
import type { DriverSettings } from './driver-settings.js';

const execFileAsync = promisify(execFile);

/** What the gaps of a tier, and the runs' limits, depend on. */
export interface MechanismFacts {
  /** The Landlock ABI, when the helper's --probe enforced a ruleset (else 0). */
  readonly landlockAbi: number;
  /** The helper could make a device node (a root host's helper then makes /dev). */
  readonly mknod: boolean;
  /** The launcher can keep a change journal (fanotify) for the check after the run (a root host). */
  readonly journal: boolean;
  readonly cgroup: CgroupInfo;
  /** The manager of the checked cgroup, which makes the runs' leaves; none when the check failed. */
  readonly manager: CgroupManager | undefined;
}

/**
 * What the gaps of a tier depend on, found once per driver (the returned function memoises it) by using
 * each mechanism: the Landlock ABI (when the helper's --probe enforced a ruleset) and a delegated cgroup
 * (a leaf that took limits and a process, `exerciseCgroup`; its manager then makes the runs' leaves).
 */
export function mechanismFacts(settings: DriverSettings): () => Promise<MechanismFacts> {
  let facts: Promise<MechanismFacts> | undefined;
  return () => {
    facts ??= findFacts(settings);
    return facts;
  };
}

async function findFacts({ helperPath, cgroupRoot }: DriverSettings): Promise<MechanismFacts> {
  let landlockAbi = 0;
  let mknod = false;
  let journal = false;
  try {
    const said = JSON.parse((await execFileAsync(helperPath, ['--probe'])).stdout) as HelperProbeOutput;
    if (said.landlock === 'ok') landlockAbi = said.landlock_abi;
    mknod = said.mknod === 'ok';
    journal = said.journal === 'ok';
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
  return { landlockAbi, mknod, journal, cgroup, manager: cgroup.available ? manager : undefined };
}

/** What `tier` does not enforce on this host, with this driver's settings. */
export function gapsOf(settings: DriverSettings, facts: MechanismFacts, tier: LinuxTierId): string[] {
  return tierGaps(tier, {
    isRoot: settings.host.isRoot,
    cgroup: facts.cgroup.available,
    landlockAbi: facts.landlockAbi,
    directUid: settings.host.isRoot ? settings.sandboxUid : undefined,
  });
}
