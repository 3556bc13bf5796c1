// What a run changed (details.changes), the run id that names it, and the driver seam's undo/changes
// request and answer types. The types are the contract with the drivers that record changes.
import { randomBytes } from 'node:crypto';

/** What a run changed in its writable roots (`details.changes`). */
export interface RunChanges {
  /** False when this run's changes were not recorded (mechanism missing); `reason` says why. */
  readonly recorded: boolean;
  readonly reason?: string;
  /** Whether `undo(runId)` can take this run back; when false, `undoRefusal` says why (budget, file too large, …). */
  readonly undoable: boolean;
  readonly undoRefusal?: string;
  readonly counts: {
    readonly created: number;
    readonly modified: number;
    readonly deleted: number;
    readonly renamed: number;
    readonly quarantined: number;
  };
  /** The changes, in path order, first ones kept when cut (see `truncated`). */
  readonly entries: readonly RunChange[];
  /** True when `entries` holds fewer than the counts add up to (the whole list is in the store). */
  readonly truncated: boolean;
}
/** One path a run changed (an entry of {@link RunChanges}). */
export interface RunChange {
  readonly op: 'created' | 'modified' | 'deleted' | 'renamed';
  /** Absolute host path (for renamed: the new path). */
  readonly path: string;
  /** renamed only: the old absolute host path. */
  readonly from?: string;
  readonly type: 'file' | 'directory' | 'symlink' | 'other';
  /** modified only: what changed. */
  readonly what?: readonly ('content' | 'mode' | 'owner' | 'target')[];
  /** Set aside by the check after the run (in the quarantine, not where the command left it). */
  readonly quarantined?: true;
}

/** What `undo` is asked (the driver seam's `undo`). */
export interface UndoRequest {
  readonly runId: string;
  /** Undo even when paths changed after the run (those later changes are lost). */
  readonly force: boolean;
  /** Say what undo would do (and its conflicts), touching nothing. */
  readonly dryRun?: boolean;
}

/** What `undo` did (or, refused, would have had to do). */
export interface UndoResult {
  readonly runId: string;
  /** True when every path was restored. */
  readonly undone: boolean;
  /** Paths put back as they were before the run. */
  readonly restored: readonly string[];
  /** Paths the run created, removed. */
  readonly removed: readonly string[];
  /** Paths that changed after the run (refused unless force), with what changed. */
  readonly conflicts: readonly { readonly path: string; readonly reason: string }[];
  /**
   * True when the undo was carried out but some paths could not be put back (a directory made immutable
   * since, a permission): `conflicts` names them, and the rest was put back. Absent or false when nothing
   * was touched (a refusal, a dry run) or everything was.
   */
  readonly partial?: boolean;
}

/** Which kept change sets `changes` lists: one run's, a workspace's or a session's (newest first). */
export interface ChangesRequest {
  readonly runId?: string;
  readonly workspace?: string;
  readonly sessionId?: string;
  /** At most this many runs. */
  readonly limit?: number;
}

/** One run whose change set is kept (for `undo` and `changes`). */
export interface KeptRun {
  readonly runId: string;
  /** `sessionKeyToFilename(sessionId)` of the run's session. */
  readonly sessionKey: string;
  readonly workspace: string;
  /** ISO-8601. */
  readonly startedAt: string;
  /** ISO-8601. */
  readonly endedAt: string;
  /** The command line, for people. */
  readonly command: string;
  /** True once `undo` took it back. */
  readonly undone: boolean;
  readonly changes: RunChanges;
}

/** The shape of every run id: `r`, 12 base36 digits of the start time in ms, `-`, 8 hex digits. */
export const RUN_ID_PATTERN = /^r[0-9a-z]{12}-[0-9a-f]{8}$/;

/**
 * A new run id: `r` + `Date.now()` in base36 zero-padded to 12 + `-` + 8 random hex digits, e.g.
 * `r00lmq3x2k9a-1f2e3d4c`. Ids sort by start time as text; only `[a-z0-9-]`, never a path separator.
 *
 * @example
 * ```ts
 * newRunId() // 'r0000mip8nx2k-9c0e77a1'
 * ```
 */
export function newRunId(now: number = Date.now()): string {
  return `r${now.toString(36).padStart(12, '0')}-${randomBytes(4).toString('hex')}`;
}

/** True when `value` has the shape of a run id (see {@link newRunId}). */
export function isRunId(value: unknown): value is string {
  return typeof value === 'string' && RUN_ID_PATTERN.test(value);
}

/**
 * `details.changes` of an output's details when it has the shape of {@link RunChanges} (a driver that
 * records changes puts it there), else `undefined`.
 */
export function changesOf(details: Readonly<Record<string, unknown>> | undefined): RunChanges | undefined {
  const c = details?.changes as Partial<RunChanges> | undefined;
  if (typeof c !== 'object' || c === null) return undefined;
  if (typeof c.recorded !== 'boolean' || typeof c.counts !== 'object' || c.counts === null) return undefined;
  if (!Array.isArray(c.entries)) return undefined;
  return c as RunChanges;
}

/**
 * One line for people: `3 created, 1 modified, 2 deleted` (only the non-zero counts, `no changes` when
 * none), `(… set aside)` for quarantined paths, and why undo is not possible when it is not; `changes not
 * recorded: <reason>` when the run's changes were not recorded.
 *
 * @example
 * ```ts
 * changesSummary(out.details.changes) // '3 created, 1 modified, 2 deleted'
 * ```
 */
export function changesSummary(changes: RunChanges): string {
  if (!changes.recorded) return `changes not recorded${changes.reason ? `: ${changes.reason}` : ''}`;
  const c = changes.counts;
  const parts = (['created', 'modified', 'deleted', 'renamed'] as const)
    .filter((k) => c[k] > 0)
    .map((k) => `${c[k]} ${k}`);
  let line = parts.length === 0 ? 'no changes' : parts.join(', ');
  if (c.quarantined > 0) line += ` (${c.quarantined} set aside)`;
  if (!changes.undoable && parts.length > 0)
    line += `; not undoable${changes.undoRefusal ? `: ${changes.undoRefusal}` : ''}`;
  return line;
}
