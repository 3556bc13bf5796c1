// undo(runId) and changes() above the driver: the run id checked before the driver sees it, the run
// looked up (unknown: ALEPH_RUN_UNKNOWN; not undoable: ALEPH_UNDO_UNAVAILABLE), and one audit record per
// undo, whatever came of it.
import path from 'node:path';
import { publishLedgerRecord, type UndoRecord } from './audit.js';
import { type ChangesRequest, isRunId, type KeptRun, type UndoResult } from './changes.js';
import type { OsSandboxDriver } from './driver.js';
import { AlephError, DriverError, InvalidInputError, isAlephError } from './errors.js';
import { monotonicMs } from './internal/clock.js';
import type { SessionId } from './session.js';

/** Options of `undo(runId, options)`. */
export interface UndoOptions {
  /** Undo even when paths the run changed were changed again after it (those later changes are lost). */
  readonly force?: boolean;
  /** Only say what undo would do and what conflicts, touching nothing. */
  readonly dryRun?: boolean;
}

/** Which runs an undo or a listing may see: a session handle sees its own session's runs only. */
export interface RunScope {
  readonly sessionKey: string;
  /** The session's id, for the audit record. */
  readonly sessionId?: SessionId;
}

const LIST_FIX =
  'take the id from details.runId of the run, or list the kept runs with `aleph-sandbox changes --workspace DIR`';

/** `ALEPH_RUN_UNKNOWN` for `runId`, with why. */
export function unknownRunError(
  runId: unknown,
  problem = 'names no kept run on this host',
): InvalidInputError {
  return new InvalidInputError('ALEPH_RUN_UNKNOWN', 'runId', runId, problem, LIST_FIX);
}

function checkRunId(runId: unknown): string {
  if (!isRunId(runId)) {
    throw unknownRunError(
      runId,
      'is not a run id (r, 12 base36 digits, "-", 8 hex digits, e.g. r0000mip8nx2k-9c0e77a1)',
    );
  }
  return runId;
}

function checkFlag(field: string, value: unknown): boolean {
  if (value === undefined) return false;
  if (typeof value !== 'boolean') {
    throw new InvalidInputError(
      'ALEPH_INVALID_COMMAND',
      field,
      value,
      'must be true or false',
      `pass ${field}: true, or leave it out`,
    );
  }
  return value;
}

function unavailable(driver: OsSandboxDriver, why: string): AlephError {
  return new AlephError('ALEPH_UNDO_UNAVAILABLE', `undo is unavailable: ${why}`, {
    details: { driver: driver.name },
  });
}

function driverFailed(driver: OsSandboxDriver, what: string, error: unknown): AlephError {
  // A driver's refusal of the run id (any code, its field `runId`) is an unknown run.
  if (isAlephError(error) && error.code !== 'ALEPH_RUN_UNKNOWN' && error.details.field === 'runId')
    return new InvalidInputError(
      'ALEPH_RUN_UNKNOWN',
      'runId',
      (error as InvalidInputError).value,
      'names no kept run on this host',
      LIST_FIX,
      { cause: error },
    );
  if (isAlephError(error)) return error;
  return new DriverError(
    'ALEPH_DRIVER_FAILED',
    driver.name,
    `driver ${driver.name} failed to ${what}: ${error instanceof Error ? error.message : String(error)}`,
    { cause: error },
  );
}

/** The kept run `runId`, through the driver's `changes` (none: the driver cannot list runs). */
async function findRun(
  driver: OsSandboxDriver,
  runId: string,
  scope: RunScope | undefined,
): Promise<KeptRun | undefined> {
  if (driver.changes === undefined) return undefined;
  let kept: readonly KeptRun[];
  try {
    kept = await driver.changes({ runId });
  } catch (error) {
    throw driverFailed(driver, `look up run ${runId}`, error);
  }
  const run = kept.find((r) => r.runId === runId);
  if (run === undefined) throw unknownRunError(runId);
  if (scope !== undefined && run.sessionKey !== scope.sessionKey)
    throw unknownRunError(runId, "is a run of another session, not this handle's");
  return run;
}

/** What an undo came to, for its audit record. */
function resultOf(result: UndoResult, dryRun: boolean, force: boolean): UndoRecord['result'] {
  if (!dryRun) return result.undone ? 'undone' : 'refused';
  return result.conflicts.length === 0 || force ? 'would-undo' : 'refused';
}

/**
 * Takes back run `runId` through `driver` and publishes one {@link UndoRecord}.
 *
 * @throws {InvalidInputError} `ALEPH_RUN_UNKNOWN` for an id that is not a run id or names no kept run (of
 *   `scope`'s session, when given); `ALEPH_INVALID_COMMAND` for a non-boolean option.
 * @throws {AlephError} `ALEPH_UNDO_UNAVAILABLE` when the driver records no changes or the run's pre-run
 *   copies were not kept; the driver's error (`ALEPH_DRIVER_FAILED` for a non-Aleph one).
 */
export async function undoRun(
  driver: OsSandboxDriver,
  runId: string,
  options: UndoOptions = {},
  scope?: RunScope,
): Promise<UndoResult> {
  const t0 = monotonicMs();
  const record: { -readonly [K in keyof UndoRecord]: UndoRecord[K] } = {
    type: 'undo',
    time: new Date().toISOString(),
    runId: String(runId).slice(0, 200),
    sessionId: scope?.sessionId ?? null,
    sessionKey: null,
    workspace: null,
    forced: options?.force === true,
    dryRun: options?.dryRun === true,
    result: 'error',
    restored: 0,
    removed: 0,
    conflicts: [],
    error: null,
    durationMs: 0,
    driver: driver.name,
  };
  try {
    const id = checkRunId(runId);
    const force = checkFlag('undo options.force', options?.force);
    const dryRun = checkFlag('undo options.dryRun', options?.dryRun);
    if (driver.undo === undefined)
      throw unavailable(driver, `driver ${driver.name} records no changes, so no run can be undone`);
    const run = await findRun(driver, id, scope);
    if (run !== undefined) {
      record.sessionKey = run.sessionKey;
      record.workspace = run.workspace;
      if (!run.changes.recorded)
        throw unavailable(
          driver,
          `run ${id}'s changes were not recorded (${run.changes.reason ?? 'no reason given'})`,
        );
      if (!run.changes.undoable && !run.undone)
        throw unavailable(
          driver,
          `run ${id} cannot be undone: ${run.changes.undoRefusal ?? 'its pre-run copies were not kept'}`,
        );
    }
    let result: UndoResult;
    try {
      result = await driver.undo({ runId: id, force, ...(dryRun ? { dryRun } : {}) });
    } catch (error) {
      throw driverFailed(driver, `undo run ${id}`, error);
    }
    record.result = resultOf(result, dryRun, force);
    record.restored = result.restored.length;
    record.removed = result.removed.length;
    record.conflicts = result.conflicts.slice(0, 100);
    return result;
  } catch (error) {
    const aleph = driverFailed(driver, 'undo', error);
    record.error = { code: aleph.code, reason: aleph.message };
    throw aleph;
  } finally {
    record.durationMs = monotonicMs() - t0;
    publishLedgerRecord(record);
  }
}

function checkChangesRequest(request: unknown): ChangesRequest {
  if (request === undefined) return {};
  if (typeof request !== 'object' || request === null) {
    throw new InvalidInputError(
      'ALEPH_INVALID_COMMAND',
      'changes request',
      request,
      'must be an object',
      'pass { runId } or { workspace, limit }',
    );
  }
  const r = request as Record<string, unknown>;
  if (r.runId !== undefined) checkRunId(r.runId);
  if (r.workspace !== undefined && (typeof r.workspace !== 'string' || !path.isAbsolute(r.workspace))) {
    throw new InvalidInputError(
      'ALEPH_INVALID_COMMAND',
      'changes request.workspace',
      r.workspace,
      'must be an absolute directory',
      'pass the workspace as an absolute path',
    );
  }
  if (r.limit !== undefined && !(Number.isSafeInteger(r.limit) && (r.limit as number) > 0)) {
    throw new InvalidInputError(
      'ALEPH_INVALID_COMMAND',
      'changes request.limit',
      r.limit,
      'must be a positive whole number',
      'pass limit: 10, or leave it out',
    );
  }
  return r as ChangesRequest;
}

/**
 * The change sets `driver` keeps: one run's (`runId`; unknown: `ALEPH_RUN_UNKNOWN`) or a workspace's
 * (newest first, at most `limit`), restricted to `scope`'s session when given.
 *
 * @throws {AlephError} `ALEPH_UNDO_UNAVAILABLE` when the driver records no changes.
 */
export async function listChanges(
  driver: OsSandboxDriver,
  request?: ChangesRequest,
  scope?: RunScope,
): Promise<readonly KeptRun[]> {
  const checked = checkChangesRequest(request);
  if (driver.changes === undefined)
    throw unavailable(driver, `driver ${driver.name} records no changes, so none are kept`);
  const { limit, ...rest } = checked;
  let kept: readonly KeptRun[];
  try {
    kept = await driver.changes(scope === undefined && limit !== undefined ? checked : rest);
  } catch (error) {
    throw driverFailed(driver, 'list the kept changes', error);
  }
  const mine = scope === undefined ? kept : kept.filter((r) => r.sessionKey === scope.sessionKey);
  if (checked.runId !== undefined && !mine.some((r) => r.runId === checked.runId))
    throw unknownRunError(
      checked.runId,
      scope === undefined ? undefined : 'names no kept run of this session',
    );
  return limit === undefined ? mine : mine.slice(0, limit);
}
