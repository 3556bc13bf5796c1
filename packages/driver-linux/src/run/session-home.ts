/** Each session's HOME on the host: made once, with only the user's git identity and its XDG directories. */
import { lstatSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { DriverError } from '@aleph/sandbox-core';
import { INNER_HOME } from '../options.js';

/** The host user's git identity, as the session home's `.gitconfig` carries it. */
export interface GitIdentity {
  readonly name?: string;
  readonly email?: string;
}

/** The XDG directories of a session home, relative to it, and the variables naming them inside. */
const XDG = [
  ['XDG_CACHE_HOME', '.cache'],
  ['XDG_CONFIG_HOME', '.config'],
  ['XDG_DATA_HOME', '.local/share'],
  ['XDG_STATE_HOME', '.local/state'],
] as const;

/**
 * Reads `user.name` and `user.email` from the host user's global git config files (`~/.gitconfig`, then
 * `$XDG_CONFIG_HOME/git/config`), by reading them, never by running git. Only those two values are kept:
 * no credentials, include paths or URL rewrites reach a sandbox.
 */
export function readGitIdentity(home: string): GitIdentity {
  const out: { name?: string; email?: string } = {};
  for (const file of [path.join(home, '.config', 'git', 'config'), path.join(home, '.gitconfig')]) {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch {
      continue;
    }
    let inUser = false;
    for (const raw of text.split(/\r?\n/)) {
      const line = raw.replace(/^\s+/, '');
      const section = /^\[\s*([A-Za-z0-9.-]+)\s*(?:"[^"]*")?\s*\]/.exec(line);
      if (section) {
        inUser = (section[1] as string).toLowerCase() === 'user' && !line.includes('"');
        continue;
      }
      const kv = /^(name|email)\s*=\s*(.*?)\s*$/i.exec(line);
      if (!inUser || kv === null) continue;
      const value = (kv[2] as string).replace(/^"(.*)"$/, '$1');
      if (value.length > 0 && value.length < 256 && !/[\0\n]/.test(value))
        out[(kv[1] as string).toLowerCase() as 'name' | 'email'] = value;
    }
  }
  return out;
}

const quote = (v: string) => `"${v.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;

/**
 * Makes sure the session's HOME exists: `<homeRoot>/<key>`, mode 0700, with a `.gitconfig` holding only
 * the host user's name and email, and the XDG directories. Its contents are made only when the directory
 * is new (a directory commands have used is never written to by path). Returns its path.
 *
 * @throws {DriverError} when `<homeRoot>/<key>` exists and is not a directory.
 */
export function ensureSessionHome(homeRoot: string, key: string, identity: GitIdentity): string {
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
  const lines: string[] = [];
  if (identity.name !== undefined || identity.email !== undefined) {
    lines.push('[user]');
    if (identity.name !== undefined) lines.push(`\tname = ${quote(identity.name)}`);
    if (identity.email !== undefined) lines.push(`\temail = ${quote(identity.email)}`);
  }
  writeFileSync(path.join(dir, '.gitconfig'), lines.length > 0 ? `${lines.join('\n')}\n` : '', {
    mode: 0o644,
    flag: 'wx',
  });
  for (const [, rel] of XDG) mkdirSync(path.join(dir, rel), { recursive: true, mode: 0o700 });
  return dir;
}

/** HOME and the XDG variables inside the sandbox. */
export function sessionHomeEnv(): Record<string, string> {
  const env: Record<string, string> = { HOME: INNER_HOME };
  for (const [name, rel] of XDG) env[name] = `${INNER_HOME}/${rel}`;
  return env;
}
