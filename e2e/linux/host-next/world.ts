import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { asUid, canSwitchUid, cliArgvAs, linuxStack, startJson } from '../../support.js';

// host-next.test.ts: the identities, one case's scratch world, and running the host's and the CLI's commands.

export const stack = linuxStack();
export const CLEAN_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';
export const UNPRIVILEGED = 65534;
export const HOST_GITCONFIG = '[user]\n\tname = Host User\n\temail = host@example.test\n';
export const HOST_BASHRC = "# the host user's own .bashrc\nexport HOST_BASHRC=1\n";
export const self = process.getuid?.() ?? 0;

export interface Identity {
  key: 'root' | 'unprivileged';
  name: string;
  uid: number;
  skip: string | undefined;
}
export const identities: Identity[] = [
  { key: 'root', name: self === 0 ? 'root' : `the current user (uid ${self})`, uid: self, skip: undefined },
  {
    key: 'unprivileged',
    name: `unprivileged uid ${UNPRIVILEGED} (setpriv)`,
    uid: UNPRIVILEGED,
    skip: canSwitchUid() ? undefined : 'needs root and setpriv',
  },
];

// ---------------------------------------------------------------------------------------------------
// One case's scratch world

/**
 * `dir` (owned by the identity, removed afterwards) holds the scratch HOME at `dir/home/u` (so an
 * ancestor of home can be granted), the trigger script and, once a payload runs, the marker.
 */
export interface Ctx {
  identity: Identity;
  mountpoint: string;
  dir: string;
  home: string;
  /** The trigger every payload runs: `#!/bin/sh` that touches `marker`. */
  trigger: string;
  marker: string;
}

export interface CliResult {
  status: number | null;
  stdout: string;
  stderr: string;
  json:
    | {
        exitCode?: number;
        stdout?: string;
        stderr?: string;
        details?: { quarantined?: string[]; quarantine?: { path: string; movedTo: string }[] };
      }
    | undefined;
}

export function asIdentity(identity: Identity, argv: string[]): string[] {
  return asUid(identity.uid, argv);
}

export const hostEnv = (ctx: Ctx, pathVar = CLEAN_PATH): NodeJS.ProcessEnv => ({
  PATH: pathVar,
  HOME: ctx.home,
  LANG: 'C.UTF-8',
});

/** Gives `dirs` and everything in them to the identity (when that is another uid). */
export function chownR(ctx: Ctx, ...dirs: string[]): void {
  if (ctx.identity.uid === self) return;
  const r = spawnSync('chown', ['-R', `${ctx.identity.uid}:${ctx.identity.uid}`, ...dirs]);
  if (r.status !== 0) throw new Error(`chown failed: ${r.stderr}`);
}

/** A host command as the identity; its outcome, never thrown (the marker is what counts). */
export function host(
  ctx: Ctx,
  argv: string[],
  cwd: string,
  pathVar?: string,
): { status: number | null; out: string } {
  const [cmd, ...args] = asIdentity(ctx.identity, argv) as [string, ...string[]];
  const r = spawnSync(cmd, args, { cwd, env: hostEnv(ctx, pathVar), encoding: 'utf8', timeout: 30_000 });
  return { status: r.status, out: `${r.stdout}${r.stderr}` };
}

/** A host command as the identity that must succeed (setup). */
export function hostOk(ctx: Ctx, argv: string[], cwd: string): string {
  const r = host(ctx, argv, cwd);
  if (r.status !== 0) throw new Error(`${argv.join(' ')} failed (${r.status}): ${r.out}`);
  return r.out;
}

/** The real CLI as the identity with the scratch HOME; `run --json` results are parsed. */
export function runCli(ctx: Ctx, args: string[]): Promise<CliResult> {
  const argv = cliArgvAs(ctx.identity.uid, ctx.mountpoint, args);
  return startJson<CliResult['json']>(argv, { env: hostEnv(ctx), cwd: ctx.dir }).done;
}

/** `run --json` of `sh -c command` in `workspace`, subprocesses allowed, everything approved. */
export function run(ctx: Ctx, workspace: string, session: string, command: string, extra: string[] = []) {
  return runCli(ctx, [
    'run',
    '--json',
    '--workspace',
    workspace,
    '--session',
    session,
    '--approve',
    'all',
    '--allow-spawn',
    ...extra,
    '--',
    'sh',
    '-c',
    command,
  ]);
}

export const shown = (r: CliResult) =>
  `exit ${r.status}\nstdout: ${(r.json?.stdout ?? r.stdout).slice(0, 3000)}\nstderr: ${(r.json?.stderr ?? '') + r.stderr}`;

export function makeCtx(identity: Identity, mountpoint: string): Ctx {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'aleph-host-next-'));
  chmodSync(dir, 0o755);
  const home = path.join(dir, 'home', 'u');
  mkdirSync(home, { recursive: true, mode: 0o700 });
  chmodSync(path.join(dir, 'home'), 0o755);
  writeFileSync(path.join(home, '.gitconfig'), HOST_GITCONFIG);
  const marker = path.join(dir, 'marker');
  const trigger = path.join(dir, 'trigger');
  writeFileSync(trigger, `#!/bin/sh\ntouch '${marker}'\ncat >/dev/null 2>&1 </dev/null\n`, { mode: 0o755 });
  const ctx: Ctx = { identity, mountpoint, dir, home, trigger, marker };
  chownR(ctx, dir);
  return ctx;
}

/** Fills `{T}` (the trigger), `{M}` (the marker), `{H}` (the scratch HOME) and `{W}` (the workspace). */
export const fill = (ctx: Ctx, s: string, ws = '') =>
  s
    .replaceAll('{T}', ctx.trigger)
    .replaceAll('{M}', ctx.marker)
    .replaceAll('{H}', ctx.home)
    .replaceAll('{W}', ws);

export const sha = (file: string) => createHash('sha1').update(readFileSync(file)).digest('hex');

export function makeRepo(ctx: Ctx, empty: boolean): string {
  const ws = path.join(ctx.dir, 'ws');
  mkdirSync(ws, { mode: 0o755 });
  writeFileSync(path.join(ws, 'README.md'), '# demo\n');
  chownR(ctx, ws);
  if (!empty) {
    hostOk(ctx, ['git', 'init', '-q', '-b', 'main', '.'], ws);
    hostOk(ctx, ['git', 'add', '-A'], ws);
    hostOk(ctx, ['git', 'commit', '-qm', 'initial'], ws);
  }
  return ws;
}

export const dotGitEntries = (ws: string) =>
  existsSync(path.join(ws, '.git')) ? readdirSync(path.join(ws, '.git')) : [];
