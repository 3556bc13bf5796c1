/**
 * A recursive delete on descriptors: each directory listed through its own descriptor, each entry
 * removed by name in it (a link is removed, never followed), directories emptied before they go.
 */
import { constants, openSync, readdirSync, rmdirSync, unlinkSync } from 'node:fs';
import { closeQuietly, PATH_FLAGS, procPath } from './proc-fd.js';

/** Empties the directory `dir` (an O_PATH descriptor): everything in it, at any depth. */
export function emptyDirectory(dir: number): void {
  for (const entry of readdirSync(procPath(dir), { withFileTypes: true })) {
    const at = procPath(dir, entry.name);
    if (entry.isDirectory()) {
      // O_DIRECTORY|O_NOFOLLOW: a directory swapped for a link meanwhile is not entered (ENOTDIR/ELOOP).
      const sub = openSync(at, PATH_FLAGS | constants.O_DIRECTORY);
      try {
        emptyDirectory(sub);
      } finally {
        closeQuietly(sub);
      }
      rmdirSync(at);
    } else {
      unlinkSync(at);
    }
  }
}
