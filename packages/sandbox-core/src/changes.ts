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
