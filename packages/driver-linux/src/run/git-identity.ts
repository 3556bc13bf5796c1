/**
 * The host user's git identity in the session HOMEs: `user.name` and `user.email` read from the user's global
 * git config (never by running git), written into each HOME's `.gitconfig` as a plain `[user]` section (so
 * `git config --global user.email` sees it, which an include would hide from git before 2.46), and kept equal
 * to the user's: a name or email set while a session lives reaches its next run.
 *
 * The `.gitconfig` is the command's as much as ours, so only what the driver wrote is rewritten: a comment
 * line records the values it wrote, and a `name =` or `email =` line is replaced only while it is exactly
 * the line written for the recorded value (a command that set its own identity, or removed the record, keeps
 * it). The file is opened without following a link and changed through that descriptor, only when it is a
 * regular file with one link. A run costs a stat of the user's two config files; a session's file is read
 * once per driver and again only when the identity changed.
 */
import {
  closeSync,
  constants,
  fstatSync,
  ftruncateSync,
  openSync,
  readFileSync,
  readSync,
  type Stats,
  statSync,
  writeSync,
} from 'node:fs';
import path from 'node:path';

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
const KEYS = ['name', 'email'] as const;
/** The comment line recording what the driver wrote (JSON of a `GitIdentity`). */
const RECORD = '# aleph-sandbox wrote the [user] name and email below, and keeps them up to date: ';
const line = (key: (typeof KEYS)[number], value: string) => `\t${key} = ${quote(value)}`;

/** A new HOME's `.gitconfig`: the record and the `[user]` section (just the record without an identity). */
export function initialGitconfig(identity: GitIdentity): string {
  const values = KEYS.filter((k) => identity[k] !== undefined).map((k) => line(k, identity[k] as string));
  return `${RECORD}${JSON.stringify(identity)}\n${values.length > 0 ? `[user]\n${values.join('\n')}\n` : ''}`;
}

/**
 * `text` with the driver's `[user]` values brought to `identity`, or `undefined` when nothing of it is the
 * driver's to change (no record) or nothing changed. A value line is the driver's while it is exactly the
 * line written for the recorded value; a value the command changed or removed stays as it is.
 */
export function refreshGitconfig(text: string, identity: GitIdentity): string | undefined {
  const lines = text.split('\n');
  const at = lines.findIndex((l) => l.startsWith(RECORD));
  if (at < 0) return undefined;
  let recorded: Record<string, unknown>;
  try {
    recorded = JSON.parse((lines[at] as string).slice(RECORD.length)) as Record<string, unknown>;
  } catch {
    return undefined;
  }
  if (typeof recorded !== 'object' || recorded === null) return undefined;
  const kept: { name?: string; email?: string } = {};
  for (const key of KEYS) {
    const was = typeof recorded[key] === 'string' ? (recorded[key] as string) : undefined;
    const now = identity[key];
    const ours = was === undefined ? -1 : sectionLine(lines, line(key, was));
    if (was !== undefined && ours < 0) {
      kept[key] = was; // the command's now: recorded as it was, so never matched again
      continue;
    }
    if (now !== undefined) kept[key] = now;
    if (ours >= 0 && now !== undefined) lines[ours] = line(key, now);
    else if (ours >= 0) lines.splice(ours, 1);
    else if (now !== undefined) insertValue(lines, key, line(key, now));
  }
  lines[lines.findIndex((l) => l.startsWith(RECORD))] = `${RECORD}${JSON.stringify(kept)}`;
  const out = lines.join('\n');
  return out === text ? undefined : out;
}

/** The index of `wanted` inside the first `[user]` section, or -1. */
function sectionLine(lines: readonly string[], wanted: string): number {
  const start = lines.indexOf('[user]');
  if (start < 0) return -1;
  for (let i = start + 1; i < lines.length && !(lines[i] as string).startsWith('['); i++)
    if (lines[i] === wanted) return i;
  return -1;
}

/** Adds `value` for `key` to the first `[user]` section (made after the record when missing), unless the
 * section already sets `key` some other way. */
function insertValue(lines: string[], key: string, value: string): void {
  let start = lines.indexOf('[user]');
  if (start < 0) {
    start = lines.findIndex((l) => l.startsWith(RECORD)) + 1;
    lines.splice(start, 0, '[user]');
  }
  let end = start + 1;
  for (; end < lines.length && !(lines[end] as string).startsWith('['); end++)
    if (new RegExp(`^\\s*${key}\\s*=`, 'i').test(lines[end] as string)) return;
  while (end > start + 1 && (lines[end - 1] as string).trim() === '') end--;
  lines.splice(end, 0, value);
}

/** What a file's stat says about its content changing (`-` when it is missing). */
const stamp = (st: Stats | undefined) =>
  st === undefined ? '-' : `${st.ino}:${st.size}:${st.mtimeMs}:${st.ctimeMs}`;

/** The user's identity, re-read when their config files change, and each session's `.gitconfig` kept to it. */
export class GitIdentitySync {
  #stamp: string | undefined;
  #identity: GitIdentity = {};
  /** Per session key: the identity its `.gitconfig` was last brought to by this driver. */
  readonly #done = new Map<string, string>();

  constructor(
    /** The host user's home, whose git config is read. */
    readonly home: string,
  ) {}

  /** The user's identity now: a stat of each config file, read again only when one changed. */
  current(): GitIdentity {
    const seen = userConfigFiles(this.home)
      .map((f) => stamp(statSync(f, { throwIfNoEntry: false })))
      .join('|');
    if (seen !== this.#stamp) {
      this.#identity = readGitIdentity(this.home);
      this.#stamp = seen;
    }
    return this.#identity;
  }

  /** Brings the `.gitconfig` of the session HOME `dir` (key `key`) to the user's identity now. */
  refresh(dir: string, key: string): void {
    const identity = this.current();
    const wanted = JSON.stringify(identity);
    if (this.#done.get(key) === wanted) return;
    rewriteOwnValues(path.join(dir, '.gitconfig'), identity);
    this.#done.set(key, wanted);
  }

  /** Marks a session whose HOME was just made with the identity now. */
  made(key: string, identity: GitIdentity): void {
    this.#done.set(key, JSON.stringify(identity));
  }
}

const MAX_GITCONFIG = 64 * 1024;

/**
 * Rewrites the driver's values in the `.gitconfig` at `file` through one descriptor: opened without
 * following a link (or blocking on a FIFO), left alone unless it is a regular file with one link and of a
 * sane size. The session directory above it is the driver's (a mount root inside, never a command's to
 * replace).
 */
function rewriteOwnValues(file: string, identity: GitIdentity): void {
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDWR | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return; // gone or a link: the command's choice
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile() || st.nlink !== 1 || st.size > MAX_GITCONFIG) return;
    const buf = Buffer.alloc(st.size);
    const n = readSync(fd, buf, 0, st.size, 0);
    const next = refreshGitconfig(buf.subarray(0, n).toString('utf8'), identity);
    if (next === undefined) return;
    const out = Buffer.from(next, 'utf8');
    ftruncateSync(fd, 0);
    writeSync(fd, out, 0, out.length, 0);
  } finally {
    closeSync(fd);
  }
}
