// Walking a directory of the workspace through the session's files (never a command, so never rate
// limited): what deepagents' `glob` and `grep` search. Links are reported with what they point at (inside
// the workspace) but never descended into, so a loop of links cannot run the walk forever; the walk stops
// after MAX_WALK_ENTRIES entries and says so.
import type { DirectoryEntry, FileType, SandboxFiles } from '@aleph/sandbox';

/** The most entries one walk looks at (deepagents' own sandbox glob stops at 50,000 lines of `find`). */
export const MAX_WALK_ENTRIES = 50_000;

/** One entry the walk met: its path relative to the start (`/`-separated) and what it is. */
export interface WalkedEntry {
  readonly relative: string;
  /** What it is; a link is reported as what it points at, `'symlink'` when that is gone or outside. */
  readonly type: FileType;
}

/** What {@link walkFiles} found. */
export interface WalkResult {
  readonly entries: WalkedEntry[];
  /** Whether it stopped at {@link MAX_WALK_ENTRIES}. */
  readonly truncated: boolean;
}

/** The type of a listed entry, a link followed (inside the root) to what it points at. */
export async function resolvedType(
  files: SandboxFiles,
  path: string,
  entry: DirectoryEntry,
): Promise<FileType> {
  if (entry.type !== 'symlink') return entry.type;
  try {
    return (await files.stat(path)).type;
  } catch {
    return 'symlink';
  }
}

/** `base` and `name` joined as the model wrote `base` (no trailing slash doubled). */
export function joinPath(base: string, name: string): string {
  if (base === '' || base === '.') return base === '' ? name : `./${name}`;
  return base.endsWith('/') ? `${base}${name}` : `${base}/${name}`;
}

/**
 * Every entry beneath the directory `start` (breadth first, each directory's entries sorted). Errors
 * listing `start` itself reject; a subdirectory that cannot be listed is left out (as `find` and `grep -r`
 * go on past one).
 */
export async function walkFiles(files: SandboxFiles, start: string): Promise<WalkResult> {
  const entries: WalkedEntry[] = [];
  const queue: string[] = [''];
  let first = true;
  while (queue.length > 0) {
    const relDir = queue.shift() as string;
    let listed: DirectoryEntry[];
    try {
      listed = await files.list(relDir === '' ? start : joinPath(start, relDir));
    } catch (error) {
      if (first) throw error;
      continue;
    }
    first = false;
    for (const entry of listed) {
      if (entries.length >= MAX_WALK_ENTRIES) return { entries, truncated: true };
      const relative = relDir === '' ? entry.name : `${relDir}/${entry.name}`;
      const type = await resolvedType(files, joinPath(start, relative), entry);
      entries.push({ relative, type });
      if (entry.type === 'directory') queue.push(relative);
    }
  }
  return { entries, truncated: false };
}
