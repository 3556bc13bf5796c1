/**
 * A finished launcher run as the driver's output: a set-up failure thrown with its fix, or the command's
 * result and details.
 */
import { constants as osConstants } from 'node:os';
import {
  type BoundedRunResult,
  createSandboxOutput,
  DriverError,
  type SandboxOutput,
} from '@aleph/sandbox-core';
import type { LinuxProfile } from '../profile/profile-types.js';
import { type LaunchReport, readLaunchReport } from './launch-report.js';

/**
 * What one run through the launcher came to: a set-up failure of the helper or of bubblewrap (thrown,
 * with its fix), or the command's output with the run's details (tier, identity, what is not enforced,
 * and what the check after the run and tier 3's guard set aside, cleared, reported or put back, read from
 * the launcher's report: see {@link afterRunDetails}).
 *
 * @throws {DriverError} `ALEPH_DRIVER_FAILED` when the helper or bubblewrap could not set the sandbox up.
 */
export function launchOutput(
  result: BoundedRunResult,
  profile: LinuxProfile,
  run: { readonly limits: string; readonly reportFile: string; readonly notEnforced: readonly string[] },
): SandboxOutput {
  const stderr = Buffer.from(result.stderr).toString('utf8');
  if (
    result.killedBy === null &&
    result.exitCode === 125 &&
    /^aleph-sandbox-init: (?!cannot execute)/m.test(stderr)
  ) {
    throw new DriverError('ALEPH_DRIVER_FAILED', 'linux', `the sandbox helper failed: ${stderr.trim()}`);
  }
  if (result.killedBy === null && result.exitCode === 1 && stderr.startsWith('bwrap: ')) {
    throw new DriverError(
      'ALEPH_DRIVER_FAILED',
      'linux',
      `bubblewrap could not set up the sandbox: ${stderr.trim()}; fix: ${bwrapFix(stderr)}`,
    );
  }
  // bwrap reports a program killed by signal N as exit status 128+N (as a shell does for a child).
  const killedBySignal =
    result.signal === null && result.exitCode !== null && result.exitCode > 128 && result.exitCode <= 128 + 64
      ? signalName(result.exitCode - 128)
      : undefined;
  const report = readLaunchReport(run.reportFile);
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
      tier: profile.tier,
      limits: run.limits,
      identity: profile.identity,
      notEnforced: [...run.notEnforced],
      ...afterRunDetails(report, profile.launch.includes('--journal')),
      ...(killedBySignal === undefined ? {} : { exitStatus: result.exitCode }),
      ...(result.killedBy === null ? {} : { killedBy: result.killedBy }),
    },
  });
}

/**
 * The check after the run, in the run's details: `afterRun` (how the writable roots were checked: by the
 * change journal, or walked whole, with why and with what could not be examined), and only when there is
 * something to say: `quarantined` (original paths set aside), `quarantine` (each with where it went: the
 * session's quarantine), `removed`, `setIdCleared`, `symlinksOut`, `restored`, `quarantineFailed`,
 * `notRestored`.
 */
export function afterRunDetails(report: LaunchReport, journal: boolean): Record<string, unknown> {
  const nonEmpty = <T>(key: string, list: readonly T[]) => (list.length === 0 ? {} : { [key]: list });
  return {
    afterRun: {
      method: journal && report.walked.length === 0 ? 'journal' : 'walk',
      ...nonEmpty('walked', report.walked),
      ...nonEmpty('incomplete', report.incomplete),
    },
    ...nonEmpty(
      'quarantined',
      report.quarantine.map((q) => q.path),
    ),
    ...nonEmpty('quarantine', report.quarantine),
    ...nonEmpty('removed', report.removed),
    ...nonEmpty('setIdCleared', report.setId),
    ...nonEmpty('symlinksOut', report.symlinks),
    ...nonEmpty('restored', report.restored),
    ...nonEmpty('quarantineFailed', report.failed),
    ...nonEmpty('notRestored', report.unrestored),
  };
}

/** The fix for a bwrap set-up failure, by what bwrap said. */
function bwrapFix(stderr: string): string {
  if (/Creating new namespace failed|No permissions to create new namespace|setting up uid map/.test(stderr))
    return 'this host refuses the namespaces this tier needs (a container without CAP_SYS_ADMIN, user namespaces disabled or restricted by AppArmor); run `aleph-sandbox doctor` to see which tier applies and how to allow a stronger one';
  if (/Can't (find source path|mkdir|mount)|No such file or directory/.test(stderr))
    return 'a granted path vanished or changed while the sandbox was set up; check the path and run again';
  return 'run `aleph-sandbox doctor`, which checks bubblewrap, the kernel and the helper one by one';
}

function signalName(n: number): string | undefined {
  for (const [name, value] of Object.entries(osConstants.signals)) if (value === n) return name;
  return undefined;
}
