/**
 * The host user's git identity as sessions see it: `user.name` and `user.email` read from the user's global
 * git config (never by running git), kept in one file of ours beside the session HOMEs
 * (`<homeRoot>/git-identity`), which every session's `.gitconfig` includes. The file is outside any HOME a
 * command can write (read-only in the sandbox), so the driver rewrites only what it owns, and a name or email
 * the user sets while a session lives reaches that session's next run. Each run costs a stat of the user's
 * two config files and of the file; they are read again only when one changed.
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, readFileSync, renameSync, rmSync, type Stats, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { GIT_IDENTITY_FILE } from '../options.js';

/** The host user's git identity. */
export interface GitIdentity {
  readonly name?: string;
  readonly email?: string;
}

/** The user's global git config files, in the order git reads them (the later wins). */
function userConfigFiles(home: string): string[] {
  return [path.join(home, '.config', 'git', 'config'), path.join(home, '.gitconfig')];
}

/**
 * Reads `user.name` and `user.email` from the host user's global git config files (`$XDG_CONFIG_HOME`'s
 * default `~/.config/git/config`, then `~/.gitconfig`), by reading them, never by running git. Only those two
 * values are kept: no credentials, include paths or URL rewrites reach a sandbox.
 */
export function readGitIdentity(home: string): GitIdentity {
  const out: { name?: string; email?: string } = {};
  for (const file of userConfigFiles(home)) {
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

/** The identity file's text. */
export function renderGitIdentity(identity: GitIdentity): string {
  const lines = [
    "# The host user's git identity, kept up to date by aleph-sandbox (read-only in the sandbox).",
  ];
  if (identity.name !== undefined || identity.email !== undefined) {
    lines.push('[user]');
    if (identity.name !== undefined) lines.push(`\tname = ${quote(identity.name)}`);
    if (identity.email !== undefined) lines.push(`\temail = ${quote(identity.email)}`);
  }
  return `${lines.join('\n')}\n`;
}

/** What a file's stat says about its content changing (undefined when it is missing). */
const stamp = (st: Stats | undefined) =>
  st === undefined ? '-' : `${st.ino}:${st.size}:${st.mtimeMs}:${st.ctimeMs}`;

/**
 * Keeps `<homeRoot>/git-identity` equal to the host user's identity. Remembers what it last saw of the
 * user's config files and of the file itself, so a run where nothing changed costs three stats.
 */
export class GitIdentitySync {
  #seen: string | undefined;

  constructor(
    readonly homeRoot: string,
    /** The host user's home, whose git config is read. */
    readonly home: string,
  ) {}

  /** The identity file's path. */
  get file(): string {
    return path.join(this.homeRoot, GIT_IDENTITY_FILE);
  }

  /** Makes the file match the user's identity now (the home root must exist). Returns its path. */
  sync(): string {
    const file = this.file;
    const seen = [...userConfigFiles(this.home), file]
      .map((f) => stamp(statSync(f, { throwIfNoEntry: false })))
      .join('|');
    if (seen === this.#seen) return file;
    const text = renderGitIdentity(readGitIdentity(this.home));
    let current: string | undefined;
    try {
      current = readFileSync(file, 'utf8');
    } catch {
      current = undefined;
    }
    if (current !== text) replaceFile(file, text);
    // What the file looks like now, so the next run sees no change.
    this.#seen = [...userConfigFiles(this.home), file]
      .map((f) => stamp(statSync(f, { throwIfNoEntry: false })))
      .join('|');
    return file;
  }
}

/**
 * Writes `text` to `file` whole: a new file of a random name beside it (created exclusively, so nothing
 * there is followed), renamed over it. The home root is the host user's, hidden from every command.
 */
function replaceFile(file: string, text: string): void {
  const tmp = `${file}.${randomBytes(6).toString('hex')}.tmp`;
  try {
    writeFileSync(tmp, text, { mode: 0o644, flag: 'wx' });
    chmodSync(tmp, 0o644); // whatever the umask: the command's own uid reads it (tier 1)
    renameSync(tmp, file);
  } finally {
    rmSync(tmp, { force: true });
  }
}
