/**
 * What a run cannot do without, checked on the run path (cheaply: a PATH lookup, an access and a 20-byte
 * read): bwrap (tiers 1–2), a usable helper, and seccomp tables for this architecture.
 */
import { DriverError } from '@aleph/sandbox-core';
import { checkHelperSync } from '../host/helper-check.js';
import { which } from '../host/which.js';
import { hostSeccompArch } from '../seccomp/seccomp-program.js';

/** What the checks found: bwrap's path (`''` when only tier 3 runs were checked) and the limits in use. */
export interface Runnable {
  readonly bwrapPath: string;
  /** `cgroup v2` or `rlimits`. */
  readonly limits: string;
}

/**
 * bwrap's path (`''` where it is missing and the run is tier 3's, which needs none).
 *
 * @throws {DriverError} `ALEPH_DRIVER_UNAVAILABLE` naming each missing piece and its fix
 *   (`ALEPH_HELPER_MISSING` when no helper fits this machine).
 */
export function checkRunnable(bwrap: string, helperPath: string, direct: boolean): string {
  const bwrapPath = which(bwrap);
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
      { details: { problems } },
    );
  }
  return bwrapPath ?? '';
}
