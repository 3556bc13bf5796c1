import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import {
  chownSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  renameSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { checkHelperSync, resolveHelperPath } from '../src/index.js';
import { tempDirs } from './temp-dirs.js';

/**
 * Tier 2's binds made from the descriptors the launcher checked (native/linux/launcher/stage.c), by the
 * real launcher around a PROGRAM that plays bwrap (its arguments are printed): `--bind-fd FD DEST` becomes
 * `--bind STATE/stage/K DEST`, where STATE/stage/K is, in PROGRAM's mount namespace alone, a mount of the
 * very inode the launcher opened, and PROGRAM holds no descriptor of it. A workspace swapped after the
 * launcher opened it (held at a FIFO the launcher opens as its cgroup) is refused on the set-up status
 * channel, not bound; the control is the same launch without the swap. As root, root without
 * CAP_SYS_ADMIN (tier 2's root) and uid 65534 (setpriv).
 */

const helper = resolveHelperPath();
const usable = process.platform === 'linux' && checkHelperSync(helper).ok;
const isRoot = process.getuid?.() === 0;
const hasSetpriv = spawnSync('sh', ['-c', 'command -v setpriv']).status === 0;

interface Who {
  name: string;
  uid: number;
  prefix: string[];
}
const whos: Who[] = [{ name: `uid ${process.getuid?.() ?? 0}`, uid: process.getuid?.() ?? 0, prefix: [] }];
if (isRoot && hasSetpriv) {
  whos.push({
    name: 'root without CAP_SYS_ADMIN',
    uid: 0,
    prefix: ['setpriv', '--inh-caps=-sys_admin', '--bounding-set=-sys_admin', '--'],
  });
  whos.push({
    name: 'uid 65534',
    uid: 65534,
    prefix: ['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups', '--'],
  });
}

const tempDir = tempDirs('aleph-stage-');
const children: ChildProcess[] = [];
afterEach(() => {
  for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
});

interface World {
  base: string;
  ws: string;
  state: string;
  status: string;
}

function world(who: Who, stateInWorkspace = false): World {
  const base = tempDir();
  const ws = path.join(base, 'ws');
  const state = stateInWorkspace ? path.join(ws, 'state') : path.join(base, 'state');
  const w = { base, ws, state, status: path.join(base, 'status') };
  mkdirSync(w.ws);
  mkdirSync(w.state, { mode: 0o700 });
  writeFileSync(path.join(w.ws, '.envrc'), 'export X=1\n');
  for (const p of [base, w.ws, w.state, path.join(w.ws, '.envrc')]) chownSync(p, who.uid, who.uid);
  return w;
}

/** What PROGRAM prints: its arguments, then, for the staged workspace ($2), dev:ino, whether it is a mount
 * point, and every descriptor it holds. */
const PROBE = [
  'for a in "$@"; do echo "arg $a"; done',
  'echo "inode $(stat -c %d:%i "$2")"',
  'grep -qF " $2 " /proc/self/mountinfo && echo "mounted $2"',
  'echo "below $(grep -cF " $2/" /proc/self/mountinfo)"',
  'for f in /proc/self/fd/*; do echo "fd $(readlink "$f")"; done',
].join('; ');

/** The launcher's argv: the workspace and its `.envrc` (a protected path: read-only) bound as bwrap would. */
function launchArgs(w: World, extra: string[]): string[] {
  return [
    '--launch',
    '--state',
    w.state,
    '--open',
    'ws',
    w.ws,
    '--open-in',
    'env',
    'ws',
    '.envrc',
    'ro',
    ...extra,
    '--',
    '/bin/sh',
    '-c',
    PROBE,
    'sh',
    '--bind-fd',
    '@ws',
    '/x',
    '--bind-fd',
    '@env',
    '/x/.envrc',
    '--status-fd',
    '@STATUS',
    // bwrap's own user namespace (tier 2): the staging makes its mount namespace in one of its own too.
    '--unshare-user',
  ];
}

const inode = (p: string) => {
  const s = statSync(p);
  return `${s.dev}:${s.ino}`;
};

/** The host's mount table lines naming the state directory (none may stay: the staging is PROGRAM's). */
const hostMounts = (w: World) =>
  readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .filter((l) => l.includes(w.state));

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe.skipIf(!usable)(
  `tier 2's binds from the checked descriptors${usable ? '' : ` [skipped: the helper is not usable here (${helper})]`}`,
  () => {
    for (const who of whos) {
      it(`${who.name}: PROGRAM binds a staged mount of the inode the launcher opened, and holds no descriptor of it`, () => {
        const w = world(who);
        const argv = [...who.prefix, helper, ...launchArgs(w, [])];
        const r = spawnSync(argv[0] as string, argv.slice(1), { encoding: 'utf8', timeout: 30_000 });
        expect(r.status, r.stderr).toBe(0);
        const args = r.stdout
          .split('\n')
          .filter((l) => l.startsWith('arg '))
          .map((l) => l.slice(4));
        const stage = path.join(w.state, 'stage');
        expect(args.slice(0, 6)).toEqual([
          '--bind',
          `${stage}/0`,
          '/x',
          '--ro-bind',
          `${stage}/1`,
          '/x/.envrc',
        ]);
        expect(r.stdout).toContain(`inode ${inode(w.ws)}\n`);
        expect(r.stdout).toContain(`mounted ${stage}/0\n`);
        const fds = r.stdout.split('\n').filter((l) => l.startsWith('fd '));
        expect(fds.filter((l) => l.includes(w.ws))).toEqual([]);
        // The host sees none of it: the stage is an empty directory, with nothing mounted on it.
        expect(readdirSync(stage)).toEqual([]);
        expect(hostMounts(w)).toEqual([]);
        expect(r.stdout).toContain('below 0\n');
      });

      it(`${who.name}: with the state directory inside the workspace, the workspace's clone does not take in the stage`, () => {
        const w = world(who, true);
        const argv = [...who.prefix, helper, ...launchArgs(w, [])];
        const r = spawnSync(argv[0] as string, argv.slice(1), { encoding: 'utf8', timeout: 30_000 });
        expect(r.status, r.stderr).toBe(0);
        const stage = path.join(w.state, 'stage');
        expect(r.stdout).toContain(`mounted ${stage}/0\n`);
        expect(r.stdout).toContain(`inode ${inode(w.ws)}\n`);
        // Cloned after the tmpfs was mounted, it would hold ${stage}/0/state/stage (and each later clone
        // every earlier one).
        expect(r.stdout).toContain('below 0\n');
        expect(hostMounts(w)).toEqual([]);
      });

      it(`${who.name}: a workspace swapped after the launcher opened it is refused, not bound (control: no swap)`, async () => {
        for (const swap of [true, false]) {
          const w = world(who);
          const gate = path.join(w.base, 'gate');
          mkdirSync(gate);
          spawnSync('mkfifo', [path.join(gate, 'cgroup.procs')]);
          chownSync(gate, who.uid, who.uid);
          chownSync(path.join(gate, 'cgroup.procs'), who.uid, who.uid);
          const status = path.join(w.base, 'report');
          const argv = [
            ...who.prefix,
            helper,
            ...launchArgs(w, ['--enter-cgroup', gate, '--report', status]),
          ];
          const child = spawn(argv[0] as string, argv.slice(1), { stdio: ['ignore', 'pipe', 'pipe'] });
          children.push(child);
          let out = '';
          child.stdout?.on('data', (d) => {
            out += d;
          });
          child.stderr?.on('data', (d) => {
            out += d;
          });
          const done = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
          // The launcher has opened the workspace once a descriptor of it is among its own; it then waits at
          // the FIFO, before PROGRAM's child stages anything.
          const held = () => {
            try {
              const fds = readdirSync(`/proc/${child.pid}/fd`);
              return fds.some((f) => {
                try {
                  return readlinkSync(`/proc/${child.pid}/fd/${f}`) === w.ws;
                } catch {
                  return false;
                }
              });
            } catch {
              return false;
            }
          };
          for (let i = 0; i < 200 && !held(); i++) await sleep(25);
          expect(held()).toBe(true);
          if (swap) {
            renameSync(w.ws, `${w.ws}.checked`);
            mkdirSync(w.ws);
            chownSync(w.ws, who.uid, who.uid);
          }
          spawnSync('sh', ['-c', `cat "${path.join(gate, 'cgroup.procs')}" >/dev/null`], { timeout: 10_000 });
          const code = await done;
          if (swap) {
            expect(code, out).toBe(125);
            expect(out).toMatch(
              /changed while the sandbox was being set up \(swapped between its check and its mount/,
            );
            expect(out).not.toContain('arg --bind');
            expect(readFileSync(status, 'utf8')).toMatch(
              /^setup\s+failed: launch: .*changed while the sandbox was being set up \(swapped/m,
            );
          } else {
            expect(code, out).toBe(0);
            expect(out).toContain(`inode ${inode(w.ws)}\n`);
          }
          expect(existsSync(path.join(w.state, 'stage'))).toBe(true);
          expect(hostMounts(w)).toEqual([]);
        }
      });
    }
  },
);
