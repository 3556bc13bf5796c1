import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import {
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  rmSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { pruneState } from '../src/state/gc.js';
import { lockedFiles, lockKey } from '../src/state/host-locks.js';

const DAY = 86_400;
const made: string[] = [];
const children: ChildProcess[] = [];
afterEach(() => {
  for (const c of children.splice(0)) {
    try {
      process.kill(-(c.pid as number), 'SIGKILL');
    } catch {}
  }
  for (const d of made.splice(0)) rmSync(d, { recursive: true, force: true });
});

function world() {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'aleph-state-gc-'));
  made.push(dir);
  const state = path.join(dir, 'run');
  const quarantine = path.join(dir, 'quarantine');
  mkdirSync(state, { mode: 0o700 });
  mkdirSync(quarantine, { mode: 0o700 });
  return { dir, state, quarantine };
}

const old = (p: string, days = 30) => {
  const t = Date.now() / 1000 - days * DAY;
  utimesSync(p, t, t);
};

/** A dead run's record (native/linux/launcher/inflight.c's layout) naming `roots`. */
function record(file: string, roots: string[]): void {
  const fields = ['aleph-inflight 1', '1', '2', '', ...roots.flatMap((r) => ['root', '1', '2', r])];
  writeFileSync(file, `${fields.join('\0')}\0`, { mode: 0o600 });
}

const options = (w: ReturnType<typeof world>) => ({
  stateDir: w.state,
  quarantineRoot: w.quarantine,
  maxAgeDays: 14,
  maxQuarantineMb: 512,
  maxRegistryFiles: 1000,
});

/** Whether some process holds a lock on `file` now. */
const heldNow = (file: string) => lockedFiles()?.has(lockKey(lstatSync(file, { bigint: true }))) === true;

const hasFlock = spawnSync('flock', ['--version']).status === 0;

describe('pruneState', () => {
  it.skipIf(!hasFlock)(
    `never removes a locked (live) record, nor a fresh one, nor a dead one whose root is there${hasFlock ? '' : ' [skipped: no flock(1)]'}`,
    async () => {
      const w = world();
      const gone = path.join(w.dir, 'gone');
      const live = path.join(w.state, 'inflight-1-1-0');
      record(live, [gone]);
      old(live);
      // Its own process group: killing the group kills flock and the sleep that holds the lock too.
      const child = spawn('flock', [live, 'sleep', '30'], { stdio: 'ignore', detached: true });
      children.push(child);
      for (let i = 0; i < 200 && !heldNow(live); i++) await new Promise((r) => setTimeout(r, 25));
      const fresh = path.join(w.state, 'inflight-2-1-0');
      record(fresh, [gone]);
      const rooted = path.join(w.state, 'inflight-3-1-0');
      record(rooted, [w.dir]);
      old(rooted);
      const r = pruneState(options(w));
      expect(r.removed).toEqual([]);
      expect(r.keptRecords).toEqual([{ path: rooted, roots: [w.dir] }]);
      for (const f of [live, fresh, rooted]) expect(existsSync(f)).toBe(true);
      process.kill(-(child.pid as number), 'SIGKILL');
      for (let i = 0; i < 200 && heldNow(live); i++) await new Promise((r) => setTimeout(r, 25));
      // Its run gone (the lock dropped), the old record whose root is gone goes.
      expect(pruneState(options(w)).removed.map((e) => e.path)).toEqual([live]);
    },
  );

  it('removes a link as the link, never what it points to', () => {
    const w = world();
    const outside = path.join(w.dir, 'outside');
    mkdirSync(outside);
    writeFileSync(path.join(outside, 'keep'), 'x');
    symlinkSync(outside, path.join(w.quarantine, 'linked-session'));
    symlinkSync(path.join(outside, 'keep'), path.join(w.state, 'gitdirs-9-9'));
    const t = Date.now() / 1000 - 30 * DAY;
    for (const l of [path.join(w.quarantine, 'linked-session'), path.join(w.state, 'gitdirs-9-9')])
      spawnSync('touch', ['-h', '-d', '@' + String(Math.floor(t)), l]);
    const r = pruneState(options(w));
    expect(r.removed.map((e) => path.basename(e.path)).sort()).toEqual(['gitdirs-9-9', 'linked-session']);
    expect(existsSync(path.join(outside, 'keep'))).toBe(true);
    for (const l of [path.join(w.quarantine, 'linked-session'), path.join(w.state, 'gitdirs-9-9')])
      expect(() => lstatSync(l)).toThrow();
  });

  it('keeps the quarantine under its budget, oldest sessions first, and the registries under their count', () => {
    const w = world();
    for (const [i, name] of ['a', 'b', 'c'].entries()) {
      mkdirSync(path.join(w.quarantine, name));
      writeFileSync(path.join(w.quarantine, name, 'blob'), Buffer.alloc(600 * 1024, 1));
      old(path.join(w.quarantine, name), 3 - i);
    }
    for (let i = 0; i < 5; i++) {
      writeFileSync(path.join(w.state, `gitdirs-1-${i}`), 'x');
      old(path.join(w.state, `gitdirs-1-${i}`), 5 - i);
    }
    const r = pruneState({ ...options(w), maxQuarantineMb: 1, maxRegistryFiles: 2, dryRun: true });
    expect(r.removed.map((e) => path.basename(e.path)).sort()).toEqual(
      ['a', 'b', 'gitdirs-1-0', 'gitdirs-1-1', 'gitdirs-1-2'].sort(),
    );
    expect(existsSync(path.join(w.quarantine, 'a'))).toBe(true);
    pruneState({ ...options(w), maxQuarantineMb: 1, maxRegistryFiles: 2 });
    expect(existsSync(path.join(w.quarantine, 'a'))).toBe(false);
    expect(existsSync(path.join(w.quarantine, 'c'))).toBe(true);
    expect(existsSync(path.join(w.state, 'gitdirs-1-4'))).toBe(true);
  });
});
