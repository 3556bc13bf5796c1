import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { asUid, cliArgvAs, startJson } from '../../support.js';
import type { Identity } from '../hosts.js';

// after-run.test.ts: one case's scratch world, the host's commands as the identity, and the CLI run on the
// identity's (simulated) host.

export const CLEAN_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';
const self = process.getuid?.() ?? 0;

/** A case's world: `dir` (owned by the identity, removed afterwards) holds HOME, the repository, the trigger. */
export interface Ctx {
  identity: Identity;
  mountpoint: string;
  dir: string;
  home: string;
  ws: string;
  /** `#!/bin/sh` that touches `marker`: what every payload runs. */
  trigger: string;
  marker: string;
}

export interface Details {
  tier?: string;
  notEnforced?: string[];
  afterRun?: { method: string; walked?: string[]; incomplete?: string[] };
  quarantined?: string[];
  quarantine?: { path: string; movedTo: string }[];
  setIdCleared?: string[];
  symlinksOut?: { path: string; target: string; leads: string }[];
}

export interface CliResult {
  status: number | null;
  stdout: string;
  stderr: string;
  json: { exitCode?: number; stdout?: string; stderr?: string; details?: Details } | undefined;
}

export const hostEnv = (ctx: Ctx): NodeJS.ProcessEnv => ({
  PATH: CLEAN_PATH,
  HOME: ctx.home,
  LANG: 'C.UTF-8',
});

/** Gives `dirs` to the identity (when that is another uid). */
export function chownR(ctx: Pick<Ctx, 'identity'>, ...dirs: string[]): void {
  if (ctx.identity.uid === self) return;
  const r = spawnSync('chown', ['-R', `${ctx.identity.uid}:${ctx.identity.uid}`, ...dirs]);
  if (r.status !== 0) throw new Error(`chown failed: ${r.stderr}`);
}

/** A host command as the identity (on the real host); its outcome, never thrown. */
export function host(ctx: Ctx, argv: string[], cwd = ctx.ws, uid = ctx.identity.uid) {
  const [cmd, ...args] = asUid(uid, argv) as [string, ...string[]];
  const r = spawnSync(cmd, args, { cwd, env: hostEnv(ctx), encoding: 'utf8', timeout: 60_000 });
  return { status: r.status, out: `${r.stdout}${r.stderr}` };
}

/** A host command as the identity that must succeed (set-up); its output. */
export function hostOk(ctx: Ctx, argv: string[], cwd = ctx.ws): string {
  const r = host(ctx, argv, cwd);
  if (r.status !== 0) throw new Error(`${argv.join(' ')} failed (${r.status}): ${r.out}`);
  return r.out;
}

/** The CLI as the identity on its (simulated) host: `run [--json] … -- sh -c COMMAND` in the repository. */
export function startRun(ctx: Ctx, session: string, command: string, json = true) {
  const args = [
    'run',
    ...(json ? ['--json'] : []),
    '--workspace',
    ctx.ws,
    '--session',
    session,
    '--approve',
    'all',
    '--allow-spawn',
    '--',
    'sh',
    '-c',
    command,
  ];
  const argv = [...ctx.identity.wrap, ...cliArgvAs(ctx.identity.uid, ctx.mountpoint, args)];
  // A run the test may SIGKILL: the CLI's own temporary directory (its proxy's sockets, which a killed
  // process cannot remove) lies in the test's HOME, removed with it.
  return startJson<CliResult['json']>(argv, { env: { ...hostEnv(ctx), TMPDIR: ctx.home }, cwd: ctx.dir });
}

export const run = (ctx: Ctx, session: string, command: string): Promise<CliResult> =>
  startRun(ctx, session, command).done;

export const shown = (r: CliResult) =>
  `exit ${r.status}\nstdout: ${(r.json?.stdout ?? r.stdout).slice(0, 2000)}\nstderr: ${(r.json?.stderr ?? '') + r.stderr.slice(0, 2000)}\ndetails: ${JSON.stringify(r.json?.details ?? {}).slice(0, 3000)}`;

/**
 * Removes `dir` in a child process (`rm -rf`), so the tests that follow run while it goes: a case's world
 * can hold 60,000 directories, whose removal waits on the filesystem for many seconds and would otherwise
 * run serially with every test. Resolves once it is gone; rejects if rm fails.
 */
export function removeInBackground(dir: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const rm = spawn('rm', ['-rf', '--', dir], { stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    rm.stderr.on('data', (d: Buffer) => {
      err += String(d);
    });
    rm.on('error', reject);
    rm.on('close', (code) =>
      code === 0 ? resolve() : reject(new Error(`rm -rf ${dir} failed (${code}): ${err}`)),
    );
  });
}

/** `{T}` the trigger, `{M}` the marker, `{W}` the repository. */
export const fill = (ctx: Ctx, s: string) =>
  s.replaceAll('{T}', ctx.trigger).replaceAll('{M}', ctx.marker).replaceAll('{W}', ctx.ws);

/** A scratch world with a repository (a commit, a README), owned by the identity. */
export function makeCtx(identity: Identity, mountpoint: string): Ctx {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'aleph-e2e-after-run-'));
  chmodSync(dir, 0o755);
  const home = path.join(dir, 'home');
  const ws = path.join(dir, 'ws');
  mkdirSync(home, { mode: 0o700 });
  mkdirSync(ws, { mode: 0o755 });
  writeFileSync(path.join(home, '.gitconfig'), '[user]\n\tname = Host User\n\temail = host@example.test\n');
  writeFileSync(path.join(ws, 'README.md'), '# demo\n');
  const marker = path.join(dir, 'marker');
  const trigger = path.join(dir, 'trigger');
  writeFileSync(trigger, `#!/bin/sh\ntouch '${marker}'\ncat >/dev/null 2>&1 </dev/null\n`, { mode: 0o755 });
  const ctx: Ctx = { identity, mountpoint, dir, home, ws, trigger, marker };
  chownR(ctx, dir);
  hostOk(ctx, ['git', 'init', '-q', '-b', 'main', '.']);
  hostOk(ctx, ['git', 'add', '-A']);
  hostOk(ctx, ['git', 'commit', '-qm', 'initial']);
  return ctx;
}
