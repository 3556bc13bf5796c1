// The host's view of a harness's sandboxed processes (the sandbox's pid namespace is visible from the
// host): which run with a marker in their command line, waiting for them to start or to be gone.
import { readdirSync, readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';

/** Host processes whose command line contains `needle` (this process excluded). */
export function processesWith(needle) {
  const found = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    try {
      if (readFileSync(`/proc/${name}/cmdline`, 'latin1').includes(needle)) found.push(Number(name));
    } catch {
      // gone, or not ours to read
    }
  }
  return found;
}

/** How many of `needle`'s processes run, once `count` of them are up (or 10 s have passed). */
export async function upTo(needle, count) {
  for (let i = 0; i < 200 && processesWith(needle).length < count; i++) await sleep(50);
  return processesWith(needle).length;
}

/** What is left of `needle`'s processes once they had up to `seconds` (default 3) to go. */
export async function leftAfter(needle, seconds = 3) {
  for (let i = 0; i < seconds * 20 && processesWith(needle).length > 0; i++) await sleep(50);
  return processesWith(needle).length;
}
