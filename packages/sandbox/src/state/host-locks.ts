/**
 * Which files a process holds a lock on, from `/proc/locks` (Linux): the state directory's live records
 * (a run's `inflight-*`, a quarantine being written) are locked for as long as their owner lives, so a
 * file found here is never pruned. Without `/proc/locks` every file counts as locked (nothing is pruned
 * that a lock might protect).
 */
import { type BigIntStats, readFileSync } from 'node:fs';

/** The locked files, as `MAJOR:MINOR:INODE` keys; `undefined` when `/proc/locks` cannot be read. */
export function lockedFiles(): Set<string> | undefined {
  let text: string;
  try {
    text = readFileSync('/proc/locks', 'utf8');
  } catch {
    return undefined;
  }
  const out = new Set<string>();
  for (const m of text.matchAll(/ ([0-9a-f]+):([0-9a-f]+):([0-9]+) /g))
    out.add(`${BigInt(`0x${m[1]}`)}:${BigInt(`0x${m[2]}`)}:${m[3]}`);
  return out;
}

/** The `/proc/locks` key of a file from its `lstat` with `bigint: true` (glibc's major/minor split). */
export function lockKey(st: BigIntStats): string {
  const dev = st.dev;
  const major = ((dev >> 8n) & 0xfffn) | ((dev >> 32n) & ~0xfffn);
  const minor = (dev & 0xffn) | ((dev >> 12n) & ~0xffn);
  return `${major}:${minor}:${st.ino}`;
}

/** Whether `st`'s file is locked by some process (true when the lock table is unknown). */
export function isLocked(locks: Set<string> | undefined, st: BigIntStats): boolean {
  return locks === undefined || locks.has(lockKey(st));
}
