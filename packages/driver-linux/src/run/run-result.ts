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
import { readLaunchReport } from './launch-report.js';

const seenAfterStart = new WeakSet<DriverError>();

/** Marks a set-up failure read from the run's own exit status and stderr, which the command could forge. */
function afterStart(error: DriverError): DriverError {
  seenAfterStart.add(error);
  return error;
}

/**
 * Whether `error` was read from what the sandboxed process left (exit status and stderr): the command may
 * have started and printed it itself, so the run must not be repeated on its account.
 */
export const failedAfterStart = (error: unknown): boolean =>
  error instanceof DriverError && seenAfterStart.has(error);

/**
 * What one run through the launcher came to: a set-up failure of the helper or of bubblewrap (thrown,
 * with its fix), or the command's output with the run's details (tier, identity, what is not enforced,
 * and what the launcher's sweep and guard set aside or put back, read from its report).
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
  // bwrap reports a program killed by signal N as exit status 128+N (as a shell does for a child).
  const killedBySignal =
    result.signal === null && result.exitCode !== null && result.exitCode > 128 && result.exitCode <= 128 + 64
      ? signalName(result.exitCode - 128)
      : undefined;
  const sweep = readLaunchReport(run.reportFile);
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
      ...(sweep.quarantined.length === 0 ? {} : { quarantined: sweep.quarantined }),
      ...(sweep.removed.length === 0 ? {} : { removed: sweep.removed }),
      ...(sweep.restored.length === 0 ? {} : { restored: sweep.restored }),
      ...(sweep.failed.length === 0 ? {} : { quarantineFailed: sweep.failed }),
      ...(sweep.unrestored.length === 0 ? {} : { notRestored: sweep.unrestored }),
      ...(sweep.unchecked.length === 0 ? {} : { protectedUnchecked: sweep.unchecked }),
      ...(sweep.incomplete.length === 0 ? {} : { gitSweepIncomplete: sweep.incomplete }),
      ...(killedBySignal === undefined ? {} : { exitStatus: result.exitCode }),
      ...(result.killedBy === null ? {} : { killedBy: result.killedBy }),
      ...(run.denials === undefined || run.denials.length === 0 ? {} : { denials: [...run.denials] }),
    },
  });
}

/** The fix for a bwrap set-up failure, by what bwrap said and the host (the preflight's own fixes). */
function bwrapFix(stderr: string, tier: LinuxTierId): string {
  if (/Can't find source path|Can't mkdir|No such file or directory/.test(stderr) && !/\/proc\//.test(stderr))
    return 'a granted path vanished or changed while the sandbox was set up; check the path and run again';
  return fixFor(tier, stderr);
}

function signalName(n: number): string | undefined {
  for (const [name, value] of Object.entries(osConstants.signals)) if (value === n) return name;
  return undefined;
}
