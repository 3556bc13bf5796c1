// A session's scratch space on the host (its /tmp): made 1777, its mount points made on descriptors (a
// link a command left is replaced, never followed), removed without following links, pruned after a crash.
import { spawnSync } from 'node:child_process';
import {
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { MountOp } from '../src/mounts/render-mounts.js';
import { sessionTmpMountPoints } from '../src/profile/session-tmp-mount.js';
import { SessionTmps } from '../src/run/session-tmp.js';
import { tempDirs } from './temp-dirs.js';

const linux = process.platform === 'linux';
const tempDir = tempDirs('aleph-session-tmp-');
const isRoot = process.getuid?.() === 0;

describe('sessionTmpMountPoints', () => {
  it('names each mount beneath /tmp that no other one beneath /tmp holds, parents first', () => {
    const mounts: MountOp[] = [
      { op: 'tmpfs', dest: '/tmp', mode: '1777' },
      { op: 'bind', src: '/s', dest: '/tmp', fd: 'S', scratch: true },
      { op: 'bind', src: '/tmp/w/ws', dest: '/tmp/w/ws', fd: 'W' },
      { op: 'ro-bind', src: '/tmp/w/ws/.git/hooks', dest: '/tmp/w/ws/.git/hooks', fd: 'H' },
      { op: 'mask-file', dest: '/tmp/w/ws/.envrc' },
      { op: 'ro-bind', src: '/tmp/r.txt', dest: '/tmp/r.txt', fd: 'R', kind: 'file' },
      { op: 'mask-file', dest: '/tmp/secret' },
      { op: 'bind', src: '/home/u/ws', dest: '/home/u/ws', fd: 'X' },
    ];
    expect(sessionTmpMountPoints(mounts)).toEqual([
      { path: 'r.txt', file: true },
      { path: 'secret', file: true },
      { path: 'w/ws', file: false },
    ]);
    expect(sessionTmpMountPoints([{ op: 'bind', src: '/w', dest: '/w', fd: 'W' }])).toEqual([]);
  });
});

describe.runIf(linux)('SessionTmps (host side)', () => {
  it('makes the directory 1777, the mount points beneath it, and removes it at close', () => {
    const state = tempDir();
    const tmps = new SessionTmps(state, isRoot);
    const dir = tmps.dirFor('k1');
    tmps.ensure(dir, [
      { path: 'a/b/ws', file: false },
      { path: 'r.txt', file: true },
    ]);
    expect(statSync(dir).mode & 0o7777).toBe(0o1777);
    expect(statSync(path.join(dir, 'a/b/ws')).isDirectory()).toBe(true);
    expect(statSync(path.join(dir, 'r.txt')).isFile()).toBe(true);
    if (isRoot) expect(statSync(dir).uid).toBe(65534);
    writeFileSync(path.join(dir, 'kept'), 'x');
    tmps.ensure(dir, []);
    expect(readFileSync(path.join(dir, 'kept'), 'utf8')).toBe('x');
    expect(() => tmps.ensure(path.join(state, 'elsewhere'))).toThrow(/not a session's scratch space/);
    tmps.close('k1');
    expect(existsSync(dir)).toBe(false);
  });

  it('a link a command left where a mount point goes is replaced, never followed (the control: it was there)', () => {
    const state = tempDir();
    const outside = tempDir();
    const tmps = new SessionTmps(state, isRoot);
    const dir = tmps.dirFor('k2');
    tmps.ensure(dir);
    symlinkSync(outside, path.join(dir, 'a'));
    symlinkSync(path.join(outside, 'target.txt'), path.join(dir, 'r.txt'));
    writeFileSync(path.join(dir, 'f'), 'not a directory');
    // A directory (with a link out inside) where a file mount point goes: removed, the link not followed.
    mkdirSync(path.join(dir, 'd.txt', 'deeper'), { recursive: true });
    symlinkSync(outside, path.join(dir, 'd.txt', 'deeper', 'out'));
    expect(lstatSync(path.join(dir, 'a')).isSymbolicLink()).toBe(true);
    tmps.ensure(dir, [
      { path: 'a/ws', file: false },
      { path: 'r.txt', file: true },
      { path: 'f/ws', file: false },
      { path: 'd.txt', file: true },
    ]);
    expect(lstatSync(path.join(dir, 'a')).isDirectory()).toBe(true);
    expect(lstatSync(path.join(dir, 'r.txt')).isFile()).toBe(true);
    expect(lstatSync(path.join(dir, 'd.txt')).isFile()).toBe(true);
    expect(lstatSync(path.join(dir, 'f/ws')).isDirectory()).toBe(true);
    expect(readdirSync(outside)).toEqual([]);
    tmps.dispose();
  });

  it("removal never follows a link out: what it points at survives (the control: it's reachable through it)", () => {
    const state = tempDir();
    const outside = tempDir();
    writeFileSync(path.join(outside, 'keep.txt'), 'keep');
    const tmps = new SessionTmps(state, isRoot);
    const dir = tmps.dirFor('k3');
    tmps.ensure(dir);
    mkdirSync(path.join(dir, 'd'));
    symlinkSync(outside, path.join(dir, 'd', 'link'));
    expect(readFileSync(path.join(dir, 'd/link/keep.txt'), 'utf8')).toBe('keep');
    tmps.dispose();
    expect(existsSync(dir)).toBe(false);
    expect(readFileSync(path.join(outside, 'keep.txt'), 'utf8')).toBe('keep');
  });

  it("prune removes a crashed process's scratch spaces, never a live one's", () => {
    const state = tempDir();
    const dead = spawnSync(process.execPath, [
      '-e',
      'process.stdout.write(String(process.pid))',
    ]).stdout.toString();
    const crashed = path.join(state, 'session-tmp', `${dead}-abcdef`, 'k');
    const live = path.join(state, 'session-tmp', `${process.pid}-123456`, 'k');
    mkdirSync(crashed, { recursive: true });
    mkdirSync(live, { recursive: true });
    const other = new SessionTmps(state, isRoot);
    other.prune();
    expect(existsSync(crashed)).toBe(false);
    expect(existsSync(live)).toBe(true);
  });
});
