/**
 * Pruning the sandbox's host state so it does not grow without bound (`aleph-sandbox gc`, and at most
 * once an hour when the CLI starts). What it prunes, in the state directory (`~/.aleph/run`) and beside it:
 *
 * - `gitdirs-*` (the git directories known beneath a root): older than `maxAgeDays`, then the oldest
 *   beyond `maxRegistryFiles`. A missing registry costs the next run there one full walk, nothing else.
 * - `tier-cache-*.json` (the host's tier verdicts): older than `maxAgeDays`; the next run probes again.
 * - `inflight-*` (a run's record until its check after the run has run): never while locked (its run is
 *   alive) nor younger than an hour; a dead one only when it cannot be read (its run never started the
 *   command, as the launcher also decides) or when every root it names is gone and it is older than
 *   `maxAgeDays`. A dead record whose root is still there is kept: the next run there checks it.
 * - `tmp/<session>` (a session's private temporary directory, tier 3): untouched for `maxAgeDays`.
 * - the quarantine's `<session>` directories: untouched for `maxAgeDays`, then the oldest while the
 *   quarantine is above `maxQuarantineMb`; never one that is locked (being written).
 * - the change store's `changes/<runId>` directories: ended (`run.json` `endedAt`) more than `maxAgeDays`
 *   ago, then the oldest while the store is above `changesMaxMb` (when set); never one that is locked.
 *
 * `uid-*.lock` and `inflight.lock` are never removed (removing a lock file breaks what it serialises; the
 * uid locks are bounded by the uid range). Nothing follows a link: entries are `lstat`ed, a link is removed
 * as the link, and a directory is removed with `rm`'s own walk, which does not follow links either.
 */
import { lstatSync, readdirSync, readFileSync, rmSync, type Stats, unlinkSync } from 'node:fs';
import path from 'node:path';
import { isLocked, lockedFiles } from './host-locks.js';
import { pathGone, recordRoots } from './inflight-records.js';

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;

/** What {@link pruneState} prunes and how much it keeps. */
export interface StateGcOptions {
  /** The state directory (`~/.aleph/run`). */
  readonly stateDir: string;
  /** The quarantine root (`~/.aleph/quarantine`). */
  readonly quarantineRoot?: string | undefined;
  /** Entries older than this many days are removed (`[sandbox.state] max_age_days`). */
  readonly maxAgeDays: number;
  /** The quarantine's budget (`[sandbox.state] max_quarantine_mb`). */
  readonly maxQuarantineMb: number;
  /** How many `gitdirs-*` registries are kept at most (`[sandbox.state] max_registry_files`). */
  readonly maxRegistryFiles: number;
  /** The change store's budget (`[sandbox.changes] max_mb`), when there is one. */
  readonly changesMaxMb?: number | undefined;
  /** Say what would be removed, remove nothing. */
  readonly dryRun?: boolean;
  /** The clock, in ms (tests). Default `Date.now()`. */
  readonly now?: number;
}

/** One entry {@link pruneState} removed (or, with `dryRun`, would remove). */
export interface PrunedEntry {
  readonly kind: 'registry' | 'tier-cache' | 'inflight' | 'tmp' | 'quarantine' | 'changes';
  readonly path: string;
  /** Bytes it held (allocated blocks). */
  readonly bytes: number;
  readonly reason: string;
}

/** What {@link pruneState} did. */
export interface StateGcReport {
  readonly dryRun: boolean;
  readonly removed: readonly PrunedEntry[];
  /** Dead run records kept because a later run in their root checks them. */
  readonly keptRecords: readonly { readonly path: string; readonly roots: readonly string[] }[];
  readonly freedBytes: number;
}

interface Entry {
  readonly path: string;
  readonly st: Stats;
}

function lstat(p: string): Stats | undefined {
  try {
    return lstatSync(p);
  } catch {
    return undefined;
  }
}

/** The entries of `dir` (lstat, no link followed); none when it is missing or not a real directory. */
function entries(dir: string, prefix = ''): Entry[] {
  const st = lstat(dir);
  if (st === undefined || !st.isDirectory()) return [];
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  return names.flatMap((name) => {
    if (!name.startsWith(prefix)) return [];
    const p = path.join(dir, name);
    const s = lstat(p);
    return s === undefined ? [] : [{ path: p, st: s }];
  });
}

/** Allocated bytes under `p` (no link followed). */
function sizeOf(p: string, st: Stats): number {
  let total = st.blocks * 512;
  if (!st.isDirectory()) return total;
  for (const e of entries(p)) total += sizeOf(e.path, e.st);
  return total;
}

class Pruner {
  readonly removed: PrunedEntry[] = [];
  readonly keptRecords: { path: string; roots: string[] }[] = [];
  readonly locks = lockedFiles();
  readonly now: number;
  readonly maxAgeMs: number;
  constructor(readonly options: StateGcOptions) {
    this.now = options.now ?? Date.now();
    this.maxAgeMs = options.maxAgeDays * DAY_MS;
  }

  age(st: Stats): number {
    return this.now - st.mtimeMs;
  }

  locked(p: string): boolean {
    try {
      return isLocked(this.locks, lstatSync(p, { bigint: true }));
    } catch {
      return false;
    }
  }

  remove(kind: PrunedEntry['kind'], e: Entry, reason: string): void {
    const bytes = sizeOf(e.path, e.st);
    if (this.options.dryRun !== true) {
      try {
        if (e.st.isDirectory()) rmSync(e.path, { recursive: true, force: true });
        else unlinkSync(e.path);
      } catch {
        return;
      }
    }
    this.removed.push({ kind, path: e.path, bytes, reason });
  }

  /** `list` oldest first: those older than the age limit, then the oldest while `over()` holds. */
  byAgeThenBudget(
    kind: PrunedEntry['kind'],
    list: { e: Entry; at: number; bytes: number }[],
    budget: number | undefined,
    what: string,
  ): void {
    list.sort((a, b) => a.at - b.at);
    let total = list.reduce((n, x) => n + x.bytes, 0);
    for (const x of list) {
      const old = this.now - x.at > this.maxAgeMs;
      if (!old && (budget === undefined || total <= budget)) continue;
      const days = Math.floor((this.now - x.at) / DAY_MS);
      this.remove(kind, x.e, old ? `${days} days old` : `${what} above its budget`);
      total -= x.bytes;
    }
  }
}

function pruneRegistries(p: Pruner, dir: string): void {
  const list = entries(dir, 'gitdirs-').filter((e) => e.st.isFile() || e.st.isSymbolicLink());
  list.sort((a, b) => b.st.mtimeMs - a.st.mtimeMs);
  list.forEach((e, i) => {
    if (p.age(e.st) > p.maxAgeMs)
      p.remove('registry', e, `unused for ${Math.floor(p.age(e.st) / DAY_MS)} days`);
    else if (i >= p.options.maxRegistryFiles)
      p.remove('registry', e, `more than ${p.options.maxRegistryFiles} registries (the oldest go)`);
  });
  for (const e of entries(dir, 'tier-cache-'))
    if (e.st.isFile() && p.age(e.st) > p.maxAgeMs) p.remove('tier-cache', e, 'older than max_age_days');
}

function pruneRecords(p: Pruner, dir: string): void {
  for (const e of entries(dir, 'inflight-')) {
    if (!e.st.isFile() || p.age(e.st) < HOUR_MS || p.locked(e.path)) continue;
    const roots = recordRoots(e.path);
    if (roots === undefined) {
      p.remove('inflight', e, 'a dead run that never started its command (its record is incomplete)');
      continue;
    }
    if (roots.every(pathGone) && p.age(e.st) > p.maxAgeMs) {
      p.remove('inflight', e, `a dead run whose roots are all gone (${roots.join(', ')})`);
      continue;
    }
    p.keptRecords.push({ path: e.path, roots });
  }
}

function pruneTmp(p: Pruner, dir: string): void {
  for (const e of entries(path.join(dir, 'tmp')))
    if (p.age(e.st) > p.maxAgeMs && !p.locked(e.path)) p.remove('tmp', e, 'untouched for max_age_days');
}

function pruneQuarantine(p: Pruner, root: string | undefined): void {
  if (root === undefined) return;
  const st = lstat(root);
  if (st === undefined || !st.isDirectory() || st.uid !== process.getuid?.()) return;
  const list = entries(root)
    .filter((e) => (e.st.isDirectory() || e.st.isSymbolicLink()) && !p.locked(e.path))
    .map((e) => ({ e, at: e.st.mtimeMs, bytes: sizeOf(e.path, e.st) }));
  p.byAgeThenBudget('quarantine', list, p.options.maxQuarantineMb * 1024 * 1024, 'the quarantine');
}

/** When a kept run ended: `run.json`'s `endedAt`, else the directory's mtime. */
function endedAt(e: Entry): number {
  try {
    const run = JSON.parse(readFileSync(path.join(e.path, 'run.json'), 'utf8')) as { endedAt?: unknown };
    const t = typeof run.endedAt === 'string' ? Date.parse(run.endedAt) : Number.NaN;
    if (Number.isFinite(t)) return t;
  } catch {}
  return e.st.mtimeMs;
}

function pruneChanges(p: Pruner, dir: string): void {
  const list = entries(path.join(dir, 'changes'))
    .filter((e) => e.st.isDirectory() && !p.locked(e.path))
    .map((e) => ({ e, at: endedAt(e), bytes: sizeOf(e.path, e.st) }));
  const budget = p.options.changesMaxMb === undefined ? undefined : p.options.changesMaxMb * 1024 * 1024;
  p.byAgeThenBudget('changes', list, budget, 'the change store');
}

/**
 * Prunes the state directory, the quarantine and the change store (see the module's comment for what
 * goes and what never does), and says what it removed.
 *
 * @example
 * ```ts
 * pruneState({ stateDir: '/home/me/.aleph/run', maxAgeDays: 14, maxQuarantineMb: 512, maxRegistryFiles: 1000 })
 * ```
 */
export function pruneState(options: StateGcOptions): StateGcReport {
  const p = new Pruner(options);
  const st = lstat(options.stateDir);
  const ours = st?.isDirectory() === true && st.uid === process.getuid?.();
  if (ours) {
    pruneRegistries(p, options.stateDir);
    pruneRecords(p, options.stateDir);
    pruneTmp(p, options.stateDir);
    pruneChanges(p, options.stateDir);
  }
  pruneQuarantine(p, options.quarantineRoot);
  return {
    dryRun: options.dryRun === true,
    removed: p.removed,
    keptRecords: p.keptRecords,
    freedBytes: p.removed.reduce((n, e) => n + e.bytes, 0),
  };
}
