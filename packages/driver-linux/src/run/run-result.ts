/**
 * A finished launcher run as the driver's output: a set-up failure thrown with its fix, or the command's
 * result and details.
 */
import { constants as osConstants } from 'node:os';
import {
  type BoundedRunResult,
  createSandboxOutput,
  DriverError,
  type SandboxDenial,
  type SandboxOutput,
} from '@aleph/sandbox-core';
import type { LinuxProfile } from '../profile/profile-types.js';
import { fixFor } from '../tiers/tier-fixes.js';
import type { LinuxTierId } from '../tiers/tiers.js';
import { type LaunchReport, readLaunchReport, type SetupStatus } from './launch-report.js';

const seenAfterStart = new WeakSet<DriverError>();

/** Marks a set-up failure of bwrap or the helper: the sandbox was partly made, so it is not replayed. */
function afterStart(error: DriverError): DriverError {
  seenAfterStart.add(error);
  return error;
}

/**
 * Whether `error` is a set-up failure of bwrap or the helper (the launcher had started PROGRAM): a command
 * never runs twice, so the run is not repeated on its account.
 */
export const failedAfterStart = (error: unknown): boolean =>
  error instanceof DriverError && seenAfterStart.has(error);

const seenRaced = new WeakSet<DriverError>();

/**
 * Whether `error` is a set-up failure the status channel gave as a path that changed between the
 * launcher's check and its mount (another run moved it): the host is as the cached tier says, so the
 * verdict stands (revalidate.ts) and the caller is told to run again.
 */
export const failedByRace = (error: unknown): boolean => error instanceof DriverError && seenRaced.has(error);

/**
 * What one run through the launcher came to: a set-up failure of the helper or of bubblewrap (thrown,
 * with its fix), or the command's output with the run's details (tier, identity, what is not enforced,
 * and what the check after the run and tier 3's guard set aside, cleared, reported or put back, read from
 * the launcher's report: see {@link afterRunDetails}). Which of the two is decided by the launcher's
 * report ({@link setupFailure}), never by what the command could print or its exit status alone.
 *
 * @throws {DriverError} `ALEPH_DRIVER_FAILED` when the helper or bubblewrap could not set the sandbox up.
 */
export function launchOutput(
  result: BoundedRunResult,
  profile: LinuxProfile,
  run: {
    readonly limits: string;
    readonly reportFile: string;
    readonly notEnforced: readonly string[];
    /** What the sandbox refused while the command ran (its proxy entrance's refusals). */
    readonly denials?: readonly SandboxDenial[];
  },
): SandboxOutput {
  const report = readLaunchReport(run.reportFile);
  setupFailure(result, profile, report.setup);
  // bwrap reports a program killed by signal N as exit status 128+N (as a shell does for a child).
  const killedBySignal =
    result.signal === null && result.exitCode !== null && result.exitCode > 128 && result.exitCode <= 128 + 64
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
      tier: profile.tier,
      ...(profile.tierFallback === undefined ? {} : { tierFallback: profile.tierFallback }),
      limits: run.limits,
      identity: profile.identity,
      notEnforced: [...run.notEnforced],
      ...afterRunDetails(report, profile.launch.includes('--journal')),
      ...interruptedRunDetails(report.earlier),
      ...(killedBySignal === undefined ? {} : { exitStatus: result.exitCode }),
      ...(result.killedBy === null ? {} : { killedBy: result.killedBy }),
      ...(run.denials === undefined || run.denials.length === 0 ? {} : { denials: [...run.denials] }),
    },
  });
}

/**
 * Throws the run's set-up failure, if it had one, as the helper's status channel tells it (the launcher's
 * report: `setup …`, read from a pipe the command never holds). `started`: the command ran, and whatever
 * it printed or exited with is its own result. `failed`: the helper's own message. When the helper said
 * nothing (`none`: bwrap failed before it, or the launcher failed before PROGRAM and wrote no `setup`
 * line), the command never ran, so the exit status and stderr are bwrap's, the helper's or the launcher's.
 *
 * @throws {DriverError} `ALEPH_DRIVER_FAILED` with the failure and its fix.
 */
function setupFailure(result: BoundedRunResult, profile: LinuxProfile, setup: SetupStatus | undefined): void {
  if (setup?.state === 'started') return;
  if (setup?.state === 'failed') {
    const error = afterStart(
      new DriverError(
        'ALEPH_DRIVER_FAILED',
        'linux',
        `the sandbox helper failed: aleph-sandbox-init: ${setup.reason}`,
      ),
    );
    if (/ changed while the sandbox was being set up \(/.test(setup.reason)) seenRaced.add(error);
    throw error;
  }
  const stderr = Buffer.from(result.stderr).toString('utf8');
  if (
    result.killedBy === null &&
    result.exitCode === 125 &&
    /^aleph-sandbox-init: (?!cannot execute)/m.test(stderr)
  ) {
    throw afterStart(
      new DriverError('ALEPH_DRIVER_FAILED', 'linux', `the sandbox helper failed: ${stderr.trim()}`),
    );
  }
  if (result.killedBy === null && result.exitCode === 1 && stderr.startsWith('bwrap: ')) {
    throw afterStart(
      new DriverError(
        'ALEPH_DRIVER_FAILED',
        'linux',
        `bubblewrap could not set up the sandbox: ${stderr.trim()}; fix: ${bwrapFix(stderr, profile.tier)}`,
      ),
    );
  }
}

/**
 * The check after the run, in the run's details: `afterRun` (how the writable roots were checked: by the
 * change journal, or walked whole, with why and with what could not be examined), and only when there is
 * something to say: `quarantined` (original paths set aside), `quarantine` (each with where it went: the
 * session's quarantine), `removed`, `setIdCleared`, `symlinksOut`, `restored`, `quarantineFailed`,
 * `quarantineNotKept` (`PATH: reason`: removed, but not kept in the quarantine: over its budget),
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
    ...nonEmpty('quarantineNotKept', report.notKept),
    ...nonEmpty('notRestored', report.unrestored),
  };
}

/**
 * `interruptedRun`, when this run found earlier runs killed whole before their own check after the run
 * (their record under the state directory unlocked: native/linux/launcher/inflight.c) and checked for them
 * before it started: `roots` (their writable roots, walked whole) and what that check did, in the shape of
 * {@link afterRunDetails} (`quarantined`, `quarantine`, `removed`, …; moved to their sessions' quarantines).
 */
export function interruptedRunDetails(earlier: LaunchReport | undefined): Record<string, unknown> {
  if (earlier === undefined) return {};
  return {
    interruptedRun: {
      reason: 'an earlier run in these roots was killed before its check after the run; checked now',
      roots: earlier.checked,
      ...afterRunDetails(earlier, false),
    },
  };
}

/** The fix for a bwrap set-up failure, by what bwrap said and the host (the preflight's own fixes). */
function bwrapFix(stderr: string, tier: LinuxTierId): string {
  // A path bwrap was handed (a descriptor's /proc/self/fd/N included) that vanished, or that another run's
  // check moved meanwhile; not its own /proc, nor the /proc/sys files it reads at start (older gVisor has
  // no /proc/sys/kernel/overflowuid), nor its loopback set-up (newer gVisor's netlink answers ENOENT),
  // which are the tier's problem.
  const vanished =
    /Can't find source path|Can't mkdir|Can't mount|Can't bind mount|No such file or directory|Race condition binding dirfd/;
  if (vanished.test(stderr) && !/mount proc|\/newroot\/proc\b|\/proc\/sys\/|loopback:/.test(stderr))
    return 'a granted path vanished or changed while the sandbox was set up; check the path and run again';
  return fixFor(tier, stderr);
}

function signalName(n: number): string | undefined {
  for (const [name, value] of Object.entries(osConstants.signals)) if (value === n) return name;
  return undefined;
}
