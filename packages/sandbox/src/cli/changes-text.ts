/**
 * How the CLI shows change sets: the one stderr line `run` prints after a command that changed something,
 * a kept run as one line (`changes` without a run id), a run's change list, and an undo's outcome.
 */
import type { KeptRun, RunChange, RunChanges, UndoResult } from '@aleph/sandbox-core';

/** At most this many paths of an undo are named in text; `--json` has them all. */
const SHOWN = 20;

function counted(c: RunChanges['counts']): string {
  const parts = (['created', 'modified', 'deleted', 'renamed'] as const)
    .filter((k) => c[k] > 0)
    .map((k) => `${c[k]} ${k}`);
  const line = parts.length === 0 ? 'no changes' : parts.join(', ');
  return c.quarantined > 0 ? `${line}, ${c.quarantined} set aside` : line;
}

function changesIn(details: Readonly<Record<string, unknown>> | undefined): RunChanges | undefined {
  const c = details?.changes as RunChanges | undefined;
  return typeof c === 'object' && c !== null && typeof c.counts === 'object' ? c : undefined;
}

/**
 * `aleph-sandbox: changes: 3 created, 1 modified, 2 deleted (run r…; undo: aleph-sandbox undo r…)` for a
 * run that changed something; a run whose changes were not recorded or cannot be undone says so instead
 * of the undo command. `undefined` for a run that changed nothing (or a driver that records nothing).
 */
export function changesLine(details: Readonly<Record<string, unknown>> | undefined): string | undefined {
  const changes = changesIn(details);
  const runId = typeof details?.runId === 'string' ? details.runId : undefined;
  if (changes === undefined || runId === undefined) return undefined;
  if (!changes.recorded) return undefined;
  const c = changes.counts;
  if (c.created + c.modified + c.deleted + c.renamed + c.quarantined === 0) return undefined;
  const undo = changes.undoable
    ? `undo: aleph-sandbox undo ${runId}`
    : `not undoable: ${changes.undoRefusal ?? 'its pre-run copies were not kept'}`;
  return `aleph-sandbox: changes: ${counted(c)} (run ${runId}; ${undo})\n`;
}

/** One line for a kept run: id, end time, counts, whether undone, the command. */
export function keptRunLine(run: KeptRun): string {
  const state = run.undone ? 'undone' : run.changes.undoable ? 'undoable' : 'not undoable';
  return `${run.runId}  ${run.endedAt}  ${counted(run.changes.counts)}  [${state}]  ${run.command}`;
}

function entryLine(e: RunChange): string {
  const what = e.what === undefined || e.what.length === 0 ? '' : ` (${e.what.join(', ')})`;
  const from = e.from === undefined ? '' : ` (from ${e.from})`;
  const aside = e.quarantined ? ' [set aside]' : '';
  return `  ${e.op.padEnd(8)} ${e.type.padEnd(9)} ${e.path}${from}${what}${aside}`;
}

/** A run's header and its change list, one path a line. */
export function keptRunText(run: KeptRun): string {
  const c = run.changes;
  const lines = [
    `run ${run.runId} (${run.startedAt} to ${run.endedAt}) in ${run.workspace}: ${run.command}`,
    `  ${counted(c.counts)}${run.undone ? '; undone' : ''}`,
  ];
  if (!c.recorded) lines.push(`  changes not recorded: ${c.reason ?? 'no reason given'}`);
  else if (!c.undoable && !run.undone) lines.push(`  not undoable: ${c.undoRefusal ?? 'no reason given'}`);
  lines.push(...c.entries.map(entryLine));
  const total = c.counts.created + c.counts.modified + c.counts.deleted + c.counts.renamed;
  if (c.truncated)
    lines.push(`  … ${Math.max(total - c.entries.length, 0)} more not listed here (the list was cut)`);
  return `${lines.join('\n')}\n`;
}

function some(label: string, paths: readonly string[]): string[] {
  const shown = paths.slice(0, SHOWN).map((p) => `  ${label} ${p}`);
  if (paths.length > SHOWN) shown.push(`  … and ${paths.length - SHOWN} more (--json lists every path)`);
  return shown;
}

/** What an undo did, would do (`dryRun`), or why it was refused: for stdout (done) or stderr (refused). */
export function undoText(result: UndoResult, dryRun: boolean, force: boolean): string {
  const conflicts = result.conflicts.map((c) => `  ${c.path}: ${c.reason}`);
  const lines: string[] = [];
  if (dryRun) {
    const ok = result.conflicts.length === 0 || force;
    lines.push(
      `${ok ? 'would undo' : 'would refuse to undo'} ${result.runId}: restore ${result.restored.length}, remove ${result.removed.length}`,
    );
  } else if (result.undone) {
    lines.push(
      `undone ${result.runId}: restored ${result.restored.length}, removed ${result.removed.length}`,
    );
  } else if (result.partial === true) {
    lines.push(
      `aleph-sandbox: undone in part ${result.runId}: ${result.conflicts.length} path(s) could not be put back, the rest was (fix what each says, then put those paths back by hand):`,
    );
  } else {
    lines.push(
      `aleph-sandbox: not undone ${result.runId}: ${result.conflicts.length} path(s) changed after the run or cannot be taken back; nothing was touched (--force undoes anyway, losing those later changes):`,
    );
  }
  if (result.conflicts.length > 0 && (dryRun || result.undone))
    lines.push(`conflicts${force ? ' (overridden by --force)' : ''}:`);
  lines.push(...conflicts);
  const [restored, removed] = dryRun ? ['restore', 'remove'] : ['restored', 'removed'];
  if (dryRun || result.undone)
    lines.push(...some(restored, result.restored), ...some(removed, result.removed));
  return `${lines.join('\n')}\n`;
}
