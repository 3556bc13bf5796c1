/**
 * What `execute` adds to a result about the run itself: its `runId` (for the `undo` and `changes` tools)
 * and what it changed (`details.changes`), and one line of text saying so when it changed something.
 */
import { changesOf, changesSummary, type RunChanges } from '@aleph/sandbox-core';
import type { ExecuteResult } from './execute-schema.js';

/** `runId` and `changes` of a run's details, for the structured result. */
export function runFields(
  details: Readonly<Record<string, unknown>>,
): Pick<ExecuteResult, 'runId' | 'changes'> {
  const changes = changesOf(details);
  return {
    ...(typeof details.runId === 'string' ? { runId: details.runId } : {}),
    ...(changes === undefined ? {} : { changes: changes as ExecuteResult['changes'] }),
  };
}

/** `changes: 2 created, 1 modified (run r…; undo with the undo tool)`, when the run changed something. */
export function changeLines(result: ExecuteResult): string[] {
  const c = result.changes;
  if (c === undefined || result.runId === undefined || !c.recorded) return [];
  const n = c.counts;
  if (n.created + n.modified + n.deleted + n.renamed + n.quarantined === 0) return [];
  const undo = c.undoable
    ? `to take it back: the undo tool with runId "${result.runId}"`
    : `it cannot be undone: ${c.undoRefusal ?? 'its pre-run copies were not kept'}`;
  return [
    `changes: ${changesSummary({ ...(c as RunChanges), undoable: true })} (run ${result.runId}; ${undo})`,
  ];
}
