import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { sessionKeyToFilename } from '@aleph/sandbox-core';
import { expect } from 'vitest';
import { asUid, cliArgvAs } from '../../support.js';
import type { Identity } from '../hosts.js';
import {
  CLEAN_PATH,
  type Expect,
  type Pattern,
  type RunResult,
  STUBS,
  TEMPLATE,
  TEMPLATE_MODES,
} from './tasks.js';

/**
 * What the agent-tasks suite does on the host: it builds the repository, runs the CLI as the identity
 * (on its simulated host, if any), and checks the tree afterwards (snapshots, owners, modes, residue).
 */

const self = process.getuid?.() ?? 0;

export interface Entry {
  type: 'file' | 'dir' | 'link' | 'other';
  uid: number;
  gid: number;
  mode: number;
  hash?: string;
}
/** Every path under `root` (relative, `''` for the root itself), by `lstat`, with file hashes. */
export function snapshot(root: string): Map<string, Entry> {
  const out = new Map<string, Entry>();
  const walk = (rel: string) => {
    const abs = rel === '' ? root : path.join(root, rel);
    const st = lstatSync(abs);
    const type = st.isFile() ? 'file' : st.isDirectory() ? 'dir' : st.isSymbolicLink() ? 'link' : 'other';
    const entry: Entry = { type, uid: st.uid, gid: st.gid, mode: st.mode & 0o7777 };
    if (type === 'file') entry.hash = createHash('sha1').update(readFileSync(abs)).digest('hex');
    if (type === 'link') entry.hash = readlinkSync(abs);
    out.set(rel, entry);
    if (type === 'dir') for (const name of readdirSync(abs)) walk(rel === '' ? name : `${rel}/${name}`);
  };
  walk('');
  return out;
}

/** What git itself rewrites: may change content, appear or go, but never change owner. */
export const GIT_INTERNAL =
  /^\.git\/(index|HEAD|ORIG_HEAD|COMMIT_EDITMSG|packed-refs|FETCH_HEAD|AUTO_MERGE|(objects|refs|logs)(\/.*)?)$/;

export const matches = (p: Pattern, s: string) => (typeof p === 'string' ? p === s : p.test(s));

export interface Env {
  identity: Identity;
  base: string;
  home: string;
  template: string;
  mountpoint: string;
}

/** argv that runs `argv` as the identity (setpriv for the unprivileged uid). */
function asIdentity(identity: Identity, argv: string[]): string[] {
  return asUid(identity.uid, argv);
}

export function hostEnv(home: string): NodeJS.ProcessEnv {
  return { PATH: CLEAN_PATH, HOME: home, LANG: 'C.UTF-8' };
}

/** Runs a host command as the identity, synchronously; throws with its output when it fails. */
export function hostRun(env: Env, argv: string[], cwd: string): string {
  const [cmd, ...args] = asIdentity(env.identity, argv) as [string, ...string[]];
  const r = spawnSync(cmd, args, { cwd, env: hostEnv(env.home), encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${argv.join(' ')} failed (${r.status}): ${r.stderr}${r.stdout}`);
  return r.stdout;
}

/** Runs the CLI as the identity, the way a user does, collecting its output as bytes. */
export function runCli(
  env: Env,
  args: string[],
  options: { input?: string | Buffer; act?: (child: ChildProcess) => void } = {},
): Promise<RunResult> {
  // On a simulated host only the CLI runs there; the host-side checks run on the real host.
  const argv = [...env.identity.wrap, ...cliArgvAs(env.identity.uid, env.mountpoint, args)];
  return new Promise((resolve) => {
    const [cmd, ...rest] = argv as [string, ...string[]];
    // A run the test may kill (`act`): the CLI's own temporary directory (its proxy's sockets, which a
    // SIGKILLed process cannot remove) lies in the test's HOME, removed with it.
    const childEnv =
      options.act === undefined ? hostEnv(env.home) : { ...hostEnv(env.home), TMPDIR: env.home };
    const child = spawn(cmd, rest, { env: childEnv, cwd: env.base });
    const out: Buffer[] = [];
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => out.push(c));
    child.stderr.on('data', (c: Buffer) => {
      stderr += c.toString('utf8');
    });
    child.on('close', (status, signal) => resolve({ status, signal, stdout: Buffer.concat(out), stderr }));
    child.stdin.on('error', () => {});
    child.stdin.end(options.input ?? '');
    options.act?.(child);
  });
}

export const runArgs = (repo: string, session: string, command: string | string[], extra: string[] = []) => [
  'run',
  '--workspace',
  repo,
  '--session',
  session,
  '--approve',
  'all',
  ...extra,
  '--',
  ...(typeof command === 'string' ? ['sh', '-c', command] : command),
];

/** Gives `dir` and everything in it to the identity (when that is another uid). */
export function chownR(env: Env, ...dirs: string[]): void {
  if (env.identity.uid === self) return;
  const r = spawnSync('chown', ['-R', `${env.identity.uid}:${env.identity.uid}`, ...dirs]);
  if (r.status !== 0) throw new Error(`chown failed: ${r.stderr}`);
}

/** Builds the template repository as the identity: files, modes, then `git init` and a first commit. */
export function makeTemplate(env: Env): void {
  const t = env.template;
  for (const [rel, content] of Object.entries(TEMPLATE)) {
    mkdirSync(path.dirname(path.join(t, rel)), { recursive: true });
    writeFileSync(path.join(t, rel), content);
  }
  for (const [rel, mode] of Object.entries(TEMPLATE_MODES)) chmodSync(path.join(t, rel), mode);
  chownR(env, t);
  hostRun(env, ['git', 'init', '-q', '-b', 'main', '.'], t);
  hostRun(env, ['git', 'add', '-A'], t);
  hostRun(env, ['git', 'commit', '-qm', 'initial'], t);
}

/** A fresh copy of the template (owner, modes and times kept), named after the task. */
export function freshRepo(env: Env, name: string): string {
  const repo = path.join(env.base, `repo-${name.replace(/[^A-Za-z0-9-]/g, '_')}`);
  const r = spawnSync('cp', ['-a', env.template, repo]);
  if (r.status !== 0) throw new Error(`cp -a failed: ${r.stderr}`);
  return repo;
}

/** Polls `cond` for a bounded number of rounds, `ms` apart. */
export async function poll(cond: () => boolean, rounds: number, ms = 50): Promise<boolean> {
  for (let i = 0; i < rounds; i++) {
    if (cond()) return true;
    await new Promise((r) => setTimeout(r, ms));
  }
  return cond();
}

/** The host-side checks every task shares: ownership, modes, residue, stubs, host git. */
export function checkTree(
  env: Env,
  repo: string,
  before: Map<string, Entry>,
  after: Map<string, Entry>,
  e: Pick<Expect, 'added' | 'removed' | 'changed' | 'modes'>,
): void {
  const owner = before.get('') as Entry;
  expect([owner.uid, owner.gid], 'the repository belongs to the identity').toEqual([
    env.identity.uid,
    env.identity.uid,
  ]);
  // Pre-existing paths: same type, owner and mode (by path: git and sed replace files with new inodes).
  const changedOwnerOrMode: string[] = [];
  const changedContent: string[] = [];
  for (const [rel, was] of before) {
    const now = after.get(rel);
    if (now === undefined) continue;
    const mode = e.modes?.[rel] ?? was.mode;
    if (now.type !== was.type || now.uid !== was.uid || now.gid !== was.gid || now.mode !== mode)
      changedOwnerOrMode.push(
        `${rel || '.'}: ${was.type} ${was.uid}:${was.gid} ${was.mode.toString(8)} -> ${now.type} ${now.uid}:${now.gid} ${now.mode.toString(8)}`,
      );
    if (!GIT_INTERNAL.test(rel) && now.hash !== was.hash) changedContent.push(rel);
  }
  expect(changedOwnerOrMode, 'owners and modes of pre-existing paths').toEqual([]);
  expect(changedContent.sort(), 'pre-existing files whose contents changed').toEqual(
    [...(e.changed ?? [])].sort(),
  );
  // New paths: exactly the expected ones (outside git's internals), all the repository owner's.
  const added = [...after.keys()].filter((p) => !before.has(p));
  const wrongOwner = added
    .map((p) => [p, after.get(p) as Entry] as const)
    .filter(([, s]) => s.uid !== owner.uid || s.gid !== owner.gid)
    .map(([p, s]) => `${p}: ${s.uid}:${s.gid}`);
  expect(wrongOwner, 'new paths belong to the repository owner').toEqual([]);
  const expectedAdded = e.added ?? [];
  const unexpected = added.filter((p) => !GIT_INTERNAL.test(p) && !expectedAdded.some((x) => matches(x, p)));
  expect(unexpected, 'paths nobody asked for (residue)').toEqual([]);
  for (const x of expectedAdded)
    if (typeof x === 'string') expect(after.has(x), `${x} was created`).toBe(true);
  const removed = [...before.keys()].filter((p) => !after.has(p) && !GIT_INTERNAL.test(p));
  expect(removed.sort(), 'removed paths').toEqual([...(e.removed ?? [])].sort());
  // Named explicitly, for a clear message.
  for (const name of [...STUBS, '.cache', '.npm', '.config', '.local'])
    expect(existsSync(path.join(repo, name)), `${name} left in the repository`).toBe(false);
}

export function hostGitStatus(
  env: Env,
  repo: string,
): { status: number | null; stdout: string; stderr: string } {
  const [cmd, ...args] = asIdentity(env.identity, ['git', '-C', repo, 'status', '--porcelain']) as [
    string,
    ...string[],
  ];
  const r = spawnSync(cmd, args, { env: hostEnv(env.home), encoding: 'utf8' });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

export const sessionHome = (env: Env, session: string) =>
  path.join(env.home, '.aleph', 'homes', sessionKeyToFilename(session));
