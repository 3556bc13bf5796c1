// The fake driver's change recording (createFakeDriver({ changes: true })): a snapshot of the workspace
// tree before and after each run, kept in memory; the difference is details.changes; undo compares the
// tree with the after-state (conflicts), then puts the before-state back. For tests of the layers above
// the driver; it follows no isolation rule and is no model of how a real driver records.
import { chmod, lstat, mkdir, readdir, readFile, readlink, rm, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { ChangesRequest, KeptRun, RunChange, RunChanges, UndoRequest, UndoResult } from '../changes.js';
import type { DriverRunRequest } from '../driver.js';
import { sessionKeyToFilename } from '../session.js';
import { unknownRunError } from '../undo.js';

/** One path as a snapshot saw it. */
type Node =
  | { readonly type: 'file'; readonly mode: number; readonly data: Buffer }
  | { readonly type: 'directory'; readonly mode: number }
  | { readonly type: 'symlink'; readonly target: string };

type Tree = Map<string, Node>;

/** Options of the fake change recording. */
export interface FakeChangesOptions {
  /** A run that changed a file larger than this (before the run) is recorded but not undoable. */
  readonly maxFileBytes?: number;
  /** Record nothing: `details.changes.recorded` is false with this reason. */
  readonly unrecorded?: string;
}

interface Kept {
  run: KeptRun;
  readonly before: ReadonlyMap<string, Node | undefined>;
  readonly after: ReadonlyMap<string, Node | undefined>;
}

/** What is at `p` now (not following a final link), `undefined` when nothing (or a socket, a fifo) is. */
async function nodeAt(p: string): Promise<Node | undefined> {
  const st = await lstat(p).catch(() => undefined);
  if (st === undefined) return undefined;
  if (st.isSymbolicLink()) return { type: 'symlink', target: await readlink(p) };
  if (st.isDirectory()) return { type: 'directory', mode: st.mode & 0o7777 };
  if (st.isFile()) return { type: 'file', mode: st.mode & 0o7777, data: await readFile(p) };
  return undefined;
}

async function snapshot(dir: string, tree: Tree = new Map()): Promise<Tree> {
  const names = await readdir(dir).catch(() => [] as string[]);
  for (const name of names.sort()) {
    const p = path.join(dir, name);
    const node = await nodeAt(p);
    if (node === undefined) continue;
    tree.set(p, node);
    if (node.type === 'directory') await snapshot(p, tree);
  }
  return tree;
}

function same(a: Node | undefined, b: Node | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  if (a.type !== b.type) return false;
  if (a.type === 'symlink') return a.target === (b as typeof a).target;
  if (a.mode !== (b as typeof a).mode) return false;
  return a.type === 'directory' || a.data.equals((b as typeof a).data);
}

function what(a: Node, b: Node): NonNullable<RunChange['what']> {
  if (a.type === 'symlink') return ['target'];
  const out: ('content' | 'mode')[] = [];
  if (a.type === 'file' && b.type === 'file' && !a.data.equals(b.data)) out.push('content');
  if (a.mode !== (b as { mode: number }).mode) out.push('mode');
  return out;
}

/** A fake driver's change store: `record` around each run, `undo` and `changes` on the seam. */
export class FakeChangeStore {
  readonly #runs = new Map<string, Kept>();
  readonly #options: FakeChangesOptions;

  constructor(options: FakeChangesOptions = {}) {
    this.#options = options;
  }

  /** Snapshots the workspace, runs `body`, and gives `details.changes` of the run. */
  async record<T>(request: DriverRunRequest, body: () => Promise<T>): Promise<[T, RunChanges]> {
    const startedAt = new Date().toISOString();
    if (this.#options.unrecorded !== undefined) {
      const reason = this.#options.unrecorded;
      const counts = { created: 0, modified: 0, deleted: 0, renamed: 0, quarantined: 0 };
      const value = await body();
      const changes: RunChanges = {
        recorded: false,
        reason,
        undoable: false,
        undoRefusal: reason,
        counts,
        entries: [],
        truncated: false,
      };
      this.#keep(request, startedAt, changes, new Map(), new Map());
      return [value, changes];
    }
    const before = await snapshot(request.workspace);
    const value = await body();
    const after = await snapshot(request.workspace);
    const entries: RunChange[] = [];
    const keptBefore = new Map<string, Node | undefined>();
    const keptAfter = new Map<string, Node | undefined>();
    for (const p of [...new Set([...before.keys(), ...after.keys()])].sort()) {
      const a = before.get(p);
      const b = after.get(p);
      if (same(a, b)) continue;
      keptBefore.set(p, a);
      keptAfter.set(p, b);
      if (a === undefined) entries.push({ op: 'created', path: p, type: (b as Node).type });
      else if (b === undefined) entries.push({ op: 'deleted', path: p, type: a.type });
      else if (a.type !== b.type) {
        entries.push({ op: 'deleted', path: p, type: a.type }, { op: 'created', path: p, type: b.type });
      } else entries.push({ op: 'modified', path: p, type: a.type, what: what(a, b) });
    }
    const count = (op: RunChange['op']) => entries.filter((e) => e.op === op).length;
    const max = this.#options.maxFileBytes;
    const big = [...keptBefore.entries()].find(
      ([, n]) => n?.type === 'file' && max !== undefined && n.data.length > max,
    );
    const changes: RunChanges = {
      recorded: true,
      undoable: big === undefined,
      ...(big === undefined
        ? {}
        : { undoRefusal: `${big[0]} is larger than the per-file cap (${max} bytes)` }),
      counts: {
        created: count('created'),
        modified: count('modified'),
        deleted: count('deleted'),
        renamed: 0,
        quarantined: 0,
      },
      entries,
      truncated: false,
    };
    this.#keep(request, startedAt, changes, keptBefore, keptAfter);
    return [value, changes];
  }

  #keep(
    request: DriverRunRequest,
    startedAt: string,
    changes: RunChanges,
    before: ReadonlyMap<string, Node | undefined>,
    after: ReadonlyMap<string, Node | undefined>,
  ): void {
    const run: KeptRun = {
      runId: request.runId,
      sessionKey: sessionKeyToFilename(request.sessionId),
      workspace: request.workspace,
      startedAt,
      endedAt: new Date().toISOString(),
      command: [request.program, ...request.args].join(' '),
      undone: false,
      changes,
    };
    this.#runs.set(request.runId, { run, before, after });
  }

  /** The seam's `changes`: one run, or a workspace's (or every) run, newest first. */
  async changes(request: ChangesRequest): Promise<readonly KeptRun[]> {
    const all = [...this.#runs.values()].map((k) => k.run).sort((a, b) => (a.runId < b.runId ? 1 : -1));
    const picked = all.filter(
      (r) =>
        (request.runId === undefined || r.runId === request.runId) &&
        (request.workspace === undefined || r.workspace === request.workspace) &&
        (request.sessionId === undefined || r.sessionKey === request.sessionId),
    );
    return request.limit === undefined ? picked : picked.slice(0, request.limit);
  }

  /** The seam's `undo`: refuses on conflicts (later changes, later kept runs) unless forced. */
  async undo(request: UndoRequest): Promise<UndoResult> {
    const kept = this.#runs.get(request.runId);
    if (kept === undefined) throw unknownRunError(request.runId);
    const refuse = (conflicts: UndoResult['conflicts']): UndoResult => ({
      runId: request.runId,
      undone: false,
      restored: [],
      removed: [],
      conflicts,
    });
    if (kept.run.undone) return refuse([{ path: kept.run.workspace, reason: 'already undone' }]);
    if (!kept.run.changes.undoable)
      return refuse([{ path: kept.run.workspace, reason: kept.run.changes.undoRefusal ?? 'not undoable' }]);
    const conflicts: { path: string; reason: string }[] = [];
    for (const [p, after] of kept.after) {
      const later = [...this.#runs.values()].find(
        (k) => k.run.runId > request.runId && !k.run.undone && k.after.has(p),
      );
      if (later !== undefined)
        conflicts.push({ path: p, reason: `changed by the later run ${later.run.runId}` });
      else if (!same(after, await nodeAt(p))) conflicts.push({ path: p, reason: 'changed after the run' });
    }
    const restored = [...kept.before].filter(([, n]) => n !== undefined).map(([p]) => p);
    const removed = [...kept.before]
      .filter(([p, n]) => n === undefined && kept.after.get(p) !== undefined)
      .map(([p]) => p);
    if (conflicts.length > 0 && !request.force) return refuse(conflicts);
    if (request.dryRun) return { runId: request.runId, undone: false, restored, removed, conflicts };
    await putBack(kept.before);
    kept.run = { ...kept.run, undone: true };
    return { runId: request.runId, undone: true, restored, removed, conflicts };
  }
}

/** Removes what was not there before (deepest first), then puts back directories, files and links. */
async function putBack(before: ReadonlyMap<string, Node | undefined>): Promise<void> {
  const paths = [...before.keys()].sort();
  for (const p of [...paths].reverse()) {
    const node = before.get(p);
    const st = await lstat(p).catch(() => undefined);
    if (st === undefined) continue;
    if (node === undefined || node.type !== 'directory' || !st.isDirectory())
      await rm(p, { recursive: true, force: true });
  }
  for (const p of paths) {
    const node = before.get(p);
    if (node === undefined) continue;
    await mkdir(path.dirname(p), { recursive: true });
    if (node.type === 'directory') {
      await mkdir(p, { recursive: true });
      await chmod(p, node.mode);
    } else if (node.type === 'symlink') await symlink(node.target, p);
    else {
      await writeFile(p, node.data);
      await chmod(p, node.mode);
    }
  }
}
