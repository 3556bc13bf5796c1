/**
 * Each session's HOME on the host: made once, with a `.gitconfig` holding the user's git identity (kept up to
 * date by `git-identity.ts`) and its XDG directories.
 */
import { lstatSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { DriverError } from '@aleph/sandbox-core';
import { INNER_HOME } from '../options.js';
import { type GitIdentity, initialGitconfig } from './git-identity.js';

/** The XDG directories of a session home, relative to it, and the variables naming them inside. */
const XDG = [
  ['XDG_CACHE_HOME', '.cache'],
  ['XDG_CONFIG_HOME', '.config'],
  ['XDG_DATA_HOME', '.local/share'],
  ['XDG_STATE_HOME', '.local/state'],
] as const;

/**
 * Makes sure the session's HOME exists: `<homeRoot>/<key>`, mode 0700, with a `.gitconfig` holding the host
 * user's name and email (and the record `GitIdentitySync` keeps them up to date by), and the XDG directories.
 * Its contents are made only when the directory is new (a directory commands have used is never written to
 * by path). Returns its path and whether it was made now.
 *
 * @throws {DriverError} when `<homeRoot>/<key>` exists and is not a directory.
 */
export function ensureSessionHome(
  homeRoot: string,
  key: string,
  identity: GitIdentity,
): { readonly dir: string; readonly made: boolean } {
  const dir = path.join(homeRoot, key);
  // The common case, every run of a session after its first: one lstat.
  if (lstatSync(dir, { throwIfNoEntry: false })?.isDirectory()) return { dir, made: false };
  mkdirSync(homeRoot, { recursive: true, mode: 0o700 });
  try {
    mkdirSync(dir, { mode: 0o700 });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    const st = lstatSync(dir);
    if (!st.isDirectory()) {
      throw new DriverError(
        'ALEPH_DRIVER_FAILED',
        'linux',
        `the session home ${dir} is not a directory; remove it and run again`,
      );
    }
    return { dir, made: false };
  }
  writeFileSync(path.join(dir, '.gitconfig'), initialGitconfig(identity), { mode: 0o644, flag: 'wx' });
  for (const [, rel] of XDG) mkdirSync(path.join(dir, rel), { recursive: true, mode: 0o700 });
  return { dir, made: true };
}

/** HOME and the XDG variables inside the sandbox. */
export function sessionHomeEnv(): Record<string, string> {
  const env: Record<string, string> = { HOME: INNER_HOME };
  for (const [name, rel] of XDG) env[name] = `${INNER_HOME}/${rel}`;
  return env;
}
