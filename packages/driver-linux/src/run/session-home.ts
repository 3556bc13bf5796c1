/**
 * Each session's HOME on the host: made once, with a `.gitconfig` that includes the user's git identity
 * (`git-identity.ts`, kept up to date outside the HOME), its XDG directories and git excludes.
 */
import { lstatSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { DriverError } from '@aleph/sandbox-core';
import { GIT_IDENTITY_FILE, INNER_HOME } from '../options.js';

/** The XDG directories of a session home, relative to it, and the variables naming them inside. */
const XDG = [
  ['XDG_CACHE_HOME', '.cache'],
  ['XDG_CONFIG_HOME', '.config'],
  ['XDG_DATA_HOME', '.local/share'],
  ['XDG_STATE_HOME', '.local/state'],
] as const;

/**
 * Makes sure the session's HOME exists: `<homeRoot>/<key>`, mode 0700, with a `.gitconfig` that includes
 * the host user's identity (`../git-identity`, relative to the `.gitconfig` git reads: `/run/aleph/git-identity`
 * in tiers 1–2, `<homeRoot>/git-identity` in tier 3), and the XDG directories. Its contents are made only when
 * the directory is new (a directory commands have used is never written to by path): what a command writes
 * to its `.gitconfig` is its own, and wins over the included identity. Returns its path.
 *
 * @throws {DriverError} when `<homeRoot>/<key>` exists and is not a directory.
 */
export function ensureSessionHome(homeRoot: string, key: string, protectedNames: readonly string[]): string {
  const dir = path.join(homeRoot, key);
  // The common case, every run of a session after its first: one lstat.
  if (lstatSync(dir, { throwIfNoEntry: false })?.isDirectory()) return dir;
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
    return dir;
  }
  writeFileSync(
    path.join(dir, '.gitconfig'),
    `# Written by aleph-sandbox: the host user's name and email, kept up to date (read-only in the sandbox).\n# What you set below wins over them.\n[include]\n\tpath = ../${GIT_IDENTITY_FILE}\n`,
    { mode: 0o644, flag: 'wx' },
  );
  for (const [, rel] of XDG) mkdirSync(path.join(dir, rel), { recursive: true, mode: 0o700 });
  // git's default excludes file ($XDG_CONFIG_HOME/git/ignore): the read-only stubs of missing protected
  // paths exist only while a command runs, so `git add -A`, `git clean -fd` and `git stash -u` inside must
  // leave them alone (a stub is a mount point: removing it fails with EBUSY).
  mkdirSync(path.join(dir, '.config', 'git'), { recursive: true, mode: 0o700 });
  writeFileSync(
    path.join(dir, '.config', 'git', 'ignore'),
    `# Written by aleph-sandbox: protected paths, read-only in the sandbox (stubs where missing).\n${protectedNames.map((n) => `/${n}`).join('\n')}\n`,
    { mode: 0o644, flag: 'wx' },
  );
  return dir;
}

/** HOME and the XDG variables inside the sandbox. */
export function sessionHomeEnv(): Record<string, string> {
  const env: Record<string, string> = { HOME: INNER_HOME };
  for (const [name, rel] of XDG) env[name] = `${INNER_HOME}/${rel}`;
  return env;
}
