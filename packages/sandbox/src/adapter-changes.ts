// What the framework adapters say about a run's changes and how they undo one: the run id of an output,
// one note naming what the run changed and how to take it back, and undo/changes on an adapter session.
import {
  AlephError,
  changesOf,
  changesSummary,
  type KeptRun,
  type RunChanges,
  type SandboxOutput,
  type SandboxSession,
  type UndoOptions,
  type UndoResult,
} from '@aleph/sandbox-core';

/** The run id of an output (`details.runId`), when it has one. */
export function runIdOf(out: SandboxOutput): string | undefined {
  const id = out.details?.runId;
  return typeof id === 'string' ? id : undefined;
}

/** The counts of what a run changed (`details.changes.counts`), when its changes were recorded. */
export function changeCountsOf(out: SandboxOutput): RunChanges['counts'] | undefined {
  const changes = changesOf(out.details);
  return changes?.recorded ? { ...changes.counts } : undefined;
}

/**
 * `changes: 2 created, 1 modified (run r…; undo: aleph-sandbox undo r…)` for a run that changed
 * something (without a prefix: each adapter adds its own), else `undefined`.
 */
export function changeNote(out: SandboxOutput): string | undefined {
  const changes = changesOf(out.details);
  const runId = runIdOf(out);
  if (changes === undefined || runId === undefined || !changes.recorded) return undefined;
  const c = changes.counts;
  if (c.created + c.modified + c.deleted + c.renamed + c.quarantined === 0) return undefined;
  const undo = changes.undoable
    ? `undo: aleph-sandbox undo ${runId}`
    : `not undoable: ${changes.undoRefusal ?? 'its pre-run copies were not kept'}`;
  return `changes: ${changesSummary({ ...changes, undoable: true })} (run ${runId}; ${undo})`;
}

function unavailable(): AlephError {
  return new AlephError(
    'ALEPH_UNDO_UNAVAILABLE',
    'undo is unavailable: this session keeps no change sets (its sandbox has no undo)',
  );
}

/**
 * Takes back run `runId` of `session` (see `SandboxSession.undo`), for the adapters' `undo` methods.
 *
 * @throws {AlephError} `ALEPH_RUN_UNKNOWN`, `ALEPH_UNDO_UNAVAILABLE`, `ALEPH_SESSION_CLOSED`.
 */
export function undoInSession(
  session: SandboxSession,
  runId: string,
  options?: UndoOptions,
): Promise<UndoResult> {
  if (session.undo === undefined) return Promise.reject(unavailable());
  return session.undo(runId, options);
}

/** `session`'s kept change sets, newest first, or one run's (see `SandboxSession.changes`). */
export function changesInSession(
  session: SandboxSession,
  request?: { readonly runId?: string; readonly limit?: number },
): Promise<readonly KeptRun[]> {
  if (session.changes === undefined) return Promise.reject(unavailable());
  return session.changes(request);
}
