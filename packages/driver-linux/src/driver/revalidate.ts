/**
 * A run whose set-up failed while the tier came from the host cache: the verdict may be out of date (the
 * host changed in a way its key does not show), so it is dropped and the preflight runs again. The command
 * runs once more by the fresh verdict only when the failure came before anything was started (the host's
 * own set-up, e.g. a cgroup leaf). A failure read from bwrap's or the helper's exit status and stderr is not
 * replayed: the command itself could have printed it, and a command must never run twice; the error then
 * says the verdict was renewed and to run it again. That happens at most once per driver: afterwards the
 * verdict is no longer the cache's. A path another run moved between the launcher's check and its mount
 * (`failedByRace`, told on the status channel) says nothing of the host: the verdict stands.
 */
import {
  DriverError,
  type DriverRunRequest,
  type SandboxOutput,
  sessionKeyToFilename,
} from '@aleph/sandbox-core';
import type { CommandRunner } from '../run/run-command.js';
import { failedAfterStart, failedByRace } from '../run/run-result.js';
import type { PlanBuilder } from './plan-builder.js';
import type { TierChoice } from './tier-choice.js';

/** Whether the request's stdin can be given again (none, text or bytes; not a stream already read). */
function replayable(request: DriverRunRequest): boolean {
  return (
    request.stdin === undefined || typeof request.stdin === 'string' || request.stdin instanceof Uint8Array
  );
}

/** `runner.run(request)`, revalidating a cached verdict when the run's set-up failed. */
export async function runRevalidating(
  request: DriverRunRequest,
  runner: CommandRunner,
  tiers: TierChoice,
  plans: PlanBuilder,
): Promise<SandboxOutput> {
  try {
    return await runner.run(request);
  } catch (error) {
    if (
      !tiers.fromCache ||
      !(error instanceof DriverError) ||
      error.code !== 'ALEPH_DRIVER_FAILED' ||
      failedByRace(error)
    )
      throw error;
    runner.recheck();
    const fresh = await tiers.revalidate();
    if (failedAfterStart(error))
      throw new DriverError(
        'ALEPH_DRIVER_FAILED',
        'linux',
        `${error.message}; the tier chosen earlier for this host (~/.aleph/run) was dropped and the host checked again (now: ${fresh.tier ?? 'no tier'}): run the command again`,
        { cause: error },
      );
    if (fresh.tier === undefined || !replayable(request)) throw error;
    const profile = await plans.build(
      fresh.tier,
      request.capabilities,
      request.cwd,
      request.workspace,
      sessionKeyToFilename(request.sessionId),
    );
    return runner.run({ ...request, profile });
  }
}
