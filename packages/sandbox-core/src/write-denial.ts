/**
 * A refused write as a `details.denials` entry (`filesystem.write`): the command tried to create, change or
 * remove a path outside its writable roots, on a read-only mount of the sandbox (a system directory, a
 * read grant, the root). The driver reports it when something the command cannot forge saw the attempt
 * (on Linux: the change recording's supervisor in the launcher, which looks at the mount the path lies on
 * as the calling process sees it); the text is shared so every display says the same.
 */
import path from 'node:path';
import type { SandboxDenial } from './output.js';

/** The `kind` of a write a read-only mount refused. */
export const FILESYSTEM_WRITE_DENIAL = 'filesystem.write';

/**
 * The denial of a write to `target` (absolute, as the sandbox sees it), `attempts` times (at least once).
 * What allows it is a write grant on the directory that holds it.
 *
 * @example
 * ```ts
 * writeDenial('/opt/tool/cache.db')
 * // { kind: 'filesystem.write', target: '/opt/tool/cache.db', reason: '… read-only …',
 * //   allowWith: 'a write grant on /opt/tool: aleph-sandbox run --allow-write /opt/tool (…)' }
 * ```
 */
export function writeDenial(target: string, attempts = 1): SandboxDenial {
  const times = attempts > 1 ? ` (${attempts} times)` : '';
  const dir = path.posix.dirname(target);
  // The path is the command's to choose: quoted, so the suggestion runs nothing but the grant when pasted.
  const word = shellWord(dir);
  return {
    kind: FILESYSTEM_WRITE_DENIAL,
    target,
    reason: `the command tried to write ${target}${times}, which is outside its writable roots: the sandbox mounts it read-only, so the write failed (the command saw e.g. "Read-only file system" or "Permission denied")`,
    allowWith: `a write grant on ${dir}: aleph-sandbox run --allow-write ${word} (capabilities.fsWrite: [${JSON.stringify(dir)}]; config [sandbox.baseline] fs_write)`,
  };
}

/** `text` as one POSIX shell word: as it is when it holds only plain characters, else single-quoted. */
function shellWord(text: string): string {
  return /^[A-Za-z0-9_./@%+=:,-]+$/.test(text) ? text : `'${text.replaceAll("'", `'\\''`)}'`;
}
