/**
 * A run's change set from its touched paths' states (states.ts): what was created, modified (content,
 * mode, owner, symlink target), deleted, and renamed (the same inode at a new path), in path order; paths
 * the check after the run set aside marked `quarantined`.
 */
import path from 'node:path';
import type { RunChange, RunChanges } from '@aleph/sandbox-core';
import type { PathState, RunStates, StateEntry } from './states.js';

/** At most this many entries go on an output's `details.changes` (the whole list is in run.json). */
export const MAX_DETAIL_ENTRIES = 1000;

const TYPES: Record<string, RunChange['type']> = { f: 'file', d: 'directory', l: 'symlink' };
const typeOf = (s: PathState): RunChange['type'] => TYPES[s.type] ?? 'other';
const present = (s: PathState) => s.type !== '-' && s.type !== '?';
/** The object's identity: its inode, and its birth time where known (an inode freed by the run can be
 * handed at once to what it makes next: `rm -rf a && mkdir b` is no rename). */
const objectKey = (s: PathState) => `${s.dev}:${s.ino}:${s.birth}`;
const sameBirth = (a: PathState, b: PathState) => a.birth === '' || b.birth === '' || a.birth === b.birth;
const sameObject = (a: PathState, b: PathState) =>
  present(a) && a.type === b.type && a.ino === b.ino && a.dev === b.dev && sameBirth(a, b);

/** What changed between two states of one object at one path. */
function whatChanged(b: PathState, a: PathState): NonNullable<RunChange['what']> {
  const what: ('content' | 'mode' | 'owner' | 'target')[] = [];
  // A directory's entries are paths of their own: a new directory in the place of one is its mode and owner.
  const content = b.type !== a.type || (b.type !== 'd' && !sameObject(b, a));
  if (content || (b.type === 'f' && (b.size !== a.size || b.mtime !== a.mtime))) what.push('content');
  if (b.mode !== a.mode) what.push('mode');
  if (b.uid !== a.uid || b.gid !== a.gid) what.push('owner');
  if (b.type === 'l' && a.type === 'l' && b.target !== a.target) what.push('target');
  return what;
}

/** Every change of ENTRIES, renames paired by inode, in path order. */
export function changeList(entries: readonly StateEntry[], quarantined: ReadonlySet<string>): RunChange[] {
  const out: RunChange[] = [];
  const movedAway = new Set<StateEntry>();
  const byObject = new Map<string, StateEntry>();
  for (const e of entries) if (present(e.before)) byObject.set(objectKey(e.before), e);
  for (const e of entries) {
    if (!present(e.after) || sameObject(e.before, e.after)) continue;
    const from = byObject.get(objectKey(e.after));
    if (
      from === undefined ||
      from === e ||
      from.before.type !== e.after.type ||
      sameObject(from.before, from.after)
    )
      continue;
    movedAway.add(from);
    out.push({
      op: 'renamed',
      path: e.path,
      from: from.path,
      type: typeOf(e.after),
      ...mark(e.path, quarantined),
    });
  }
  const renamedTo = new Set(out.map((c) => c.path));
  for (const e of entries) {
    const b = e.before;
    const a = e.after;
    if (renamedTo.has(e.path)) continue;
    if (!present(b) && present(a))
      out.push({ op: 'created', path: e.path, type: typeOf(a), ...mark(e.path, quarantined) });
    else if (present(b) && !present(a)) {
      if (!movedAway.has(e)) out.push({ op: 'deleted', path: e.path, type: typeOf(b) });
    } else if (present(b) && present(a)) {
      if (movedAway.has(e)) {
        out.push({ op: 'created', path: e.path, type: typeOf(a), ...mark(e.path, quarantined) });
        continue;
      }
      const what = whatChanged(b, a);
      if (what.length > 0)
        out.push({ op: 'modified', path: e.path, type: typeOf(a), what, ...mark(e.path, quarantined) });
    }
  }
  return out.sort((x, y) => (x.path < y.path ? -1 : x.path > y.path ? 1 : 0));
}

/** `p` is set aside when it, or a directory it is in, was moved into the quarantine. */
function mark(p: string, quarantined: ReadonlySet<string>): { quarantined?: true } {
  if (quarantined.size === 0) return {};
  for (let at = p; at.length > 1; at = path.dirname(at))
    if (quarantined.has(at)) return { quarantined: true };
  return {};
}

/** `details.changes` of a run: counts, the first `limit` entries, whether it can be undone. */
export function runChanges(
  states: RunStates,
  quarantined: ReadonlySet<string>,
  limit = MAX_DETAIL_ENTRIES,
): RunChanges {
  const list = states.recorded ? changeList(states.entries, quarantined) : [];
  const count = (op: RunChange['op']) => list.filter((c) => c.op === op).length;
  return {
    recorded: states.recorded,
    ...(states.recorded ? {} : { reason: states.reason }),
    undoable: states.recorded && states.undoable,
    ...(states.recorded && states.undoable
      ? {}
      : { undoRefusal: states.recorded ? states.undoRefusal : states.reason }),
    counts: {
      created: count('created'),
      modified: count('modified'),
      deleted: count('deleted'),
      renamed: count('renamed'),
      quarantined: list.filter((c) => c.quarantined === true).length,
    },
    entries: list.slice(0, limit),
    truncated: list.length > limit,
  };
}

/** `details.changes` of a run whose changes were not recorded. */
export function unrecorded(reason: string): RunChanges {
  return {
    recorded: false,
    reason,
    undoable: false,
    undoRefusal: reason,
    counts: { created: 0, modified: 0, deleted: 0, renamed: 0, quarantined: 0 },
    entries: [],
    truncated: false,
  };
}
