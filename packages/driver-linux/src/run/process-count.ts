/** How many processes a uid runs now: RLIMIT_NPROC counts them all. */
import { readdirSync, statSync } from 'node:fs';

const processCounts = new Map<number, { at: number; count: number }>();

/**
 * Processes owned by `uid` right now (RLIMIT_NPROC counts them all), cached for 250 ms. Without a
 * delegated cgroup v2 the process limit is per uid, so executions running at the same time share it.
 */
export function processesOf(uid: number): number {
  const cached = processCounts.get(uid);
  if (cached !== undefined && Date.now() - cached.at < 250) return cached.count;
  let count = 0;
  for (const name of readdirSync('/proc')) {
    if (name.charCodeAt(0) < 48 || name.charCodeAt(0) > 57) continue;
    try {
      if (statSync(`/proc/${name}`).uid === uid) count++;
    } catch {
      // exited
    }
  }
  processCounts.set(uid, { at: Date.now(), count });
  return count;
}
