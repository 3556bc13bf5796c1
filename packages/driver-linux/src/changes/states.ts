/**
 * Reading a run's `states` file (written by the launcher, native/linux/changes/store.c): its roots, whether
 * the run was recorded and can be undone, and each touched path's state before and after the run.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';

/** One path's state (native/linux/changes/state.h). */
export interface PathState {
  /** 'f' file, 'd' directory, 'l' symlink, 'p' FIFO, 'o' other (socket, device), '-' absent, '?' unknown. */
  readonly type: string;
  readonly mode: number;
  readonly uid: number;
  readonly gid: number;
  readonly size: number;
  readonly dev: string;
  readonly ino: string;
  readonly mtime: string;
  readonly target: string;
  /** The birth time (`SEC.NSEC`); '' where the filesystem or an older states file does not tell it. */
  readonly birth: string;
}

/** A touched path: absolute host path, its before and after states. */
export interface StateEntry {
  readonly path: string;
  readonly before: PathState;
  readonly after: PathState;
}

/** What `states` holds. */
export interface RunStates {
  readonly roots: readonly string[];
  readonly recorded: boolean;
  readonly reason: string;
  readonly undoable: boolean;
  readonly undoRefusal: string;
  /** Allocated bytes of the run's pre-run copies. */
  readonly bytes: number;
  readonly entries: readonly StateEntry[];
  /**
   * The process creations the supervisor refused (the run's capabilities deny subprocesses and its trapping
   * filter carried that denial): per program (its comm), how many times; at most 16 programs.
   */
  readonly spawns: readonly RefusedSpawn[];
  /** Writes outside the writable roots that a read-only mount refused: per path, how many; at most 16. */
  readonly writes: readonly RefusedWrite[];
  /** Refused writes to paths beyond the 16 listed in `writes`. */
  readonly writesUnlisted: number;
}

/** A path outside the writable roots whose write a read-only mount refused, and how many times. */
export interface RefusedWrite {
  readonly path: string;
  readonly attempts: number;
}

/** A program whose process creation the supervisor refused, and how many times. */
export interface RefusedSpawn {
  readonly program: string;
  readonly attempts: number;
}

/** Decodes a name written by the launcher's `name_write` (`:` then bytes, some as %XX). */
export function decodeName(field: string): string {
  if (!field.startsWith(':')) throw new Error(`malformed name ${field}`);
  const bytes: number[] = [];
  const s = Buffer.from(field.slice(1), 'latin1');
  for (let i = 0; i < s.length; i++) {
    if (s[i] === 0x25 && i + 2 < s.length) {
      bytes.push(Number.parseInt(s.subarray(i + 1, i + 3).toString('latin1'), 16));
      i += 2;
    } else bytes.push(s[i] as number);
  }
  return Buffer.from(bytes).toString('utf8');
}

/** A birth time written after an entry's two states (`@SEC.NSEC`); '' when none or unknown (0). */
function readBirth(field: string | undefined): string {
  if (field === undefined || !field.startsWith('@')) return '';
  const t = field.slice(1);
  return /^0+\.0+$/.test(t) ? '' : t;
}

function readState(f: readonly string[], at: number, birth: string | undefined): PathState {
  const n = (i: number) => f[at + i] as string;
  return {
    birth: readBirth(birth),
    type: n(0),
    mode: Number.parseInt(n(1), 8),
    uid: Number(n(2)),
    gid: Number(n(3)),
    size: Number(n(4)),
    dev: n(6),
    ino: n(7),
    mtime: `${n(8)}.${n(9)}`,
    target: decodeName(n(12)),
  };
}

/** Parses the text of a `states` file. */
export function parseStates(text: string): RunStates {
  const roots: string[] = [];
  const entries: StateEntry[] = [];
  const spawns: RefusedSpawn[] = [];
  const writes: RefusedWrite[] = [];
  let writesUnlisted = 0;
  let recorded = true;
  let reason = '';
  let undoable = true;
  let undoRefusal = '';
  let bytes = 0;
  for (const line of text.split('\n')) {
    // Names are escaped (no spaces inside a field), so fields split on single spaces.
    const f = line.split(' ').filter((x) => x !== '');
    if (f[0] === 'root') roots.push(decodeName(f[2] as string));
    else if (f[0] === 'recorded') {
      recorded = f[1] === '1';
      reason = decodeName(f[2] ?? ':');
    } else if (f[0] === 'undoable') {
      undoable = f[1] === '1';
      undoRefusal = decodeName(f[2] ?? ':');
    } else if (f[0] === 'bytes') bytes = Number(f[1]);
    else if (f[0] === 'spawn') spawns.push({ attempts: Number(f[1]), program: decodeName(f[2] ?? ':') });
    else if (f[0] === 'rofs') writes.push({ attempts: Number(f[1]), path: decodeName(f[2] ?? ':') });
    else if (f[0] === 'rofs-more') writesUnlisted = Number(f[1]);
    else if (f[0] === 'entry') {
      const root = roots[Number(f[1])] as string;
      // Its name before the run, and (`>NAME`, after the births) where it is after the run when a directory
      // above it moved: the change is told where it is now.
      // `>-`: a move replaced or took away where it was; it is told by its name before the run.
      const now = f[33]?.startsWith('>') && f[33] !== '>-' ? f[33].slice(1) : undefined;
      const rel = decodeName((now ?? f[4]) as string);
      entries.push({
        path: rel === '' ? root : path.join(root, rel),
        before: readState(f, 5, f[31]),
        after: readState(f, 18, f[32]),
      });
    }
  }
  return { roots, recorded, reason, undoable, undoRefusal, bytes, entries, spawns, writes, writesUnlisted };
}

/** Reads `<dir>/states`; undefined when the launcher wrote none. */
export function readStates(dir: string): RunStates | undefined {
  try {
    return parseStates(readFileSync(path.join(dir, 'states'), 'latin1'));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}
