import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { CgroupManager, detectCgroup } from '../src/index.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** A fake cgroup v2 tree: our cgroup at /user.slice/app with the given controllers. */
function fakeTree(controllers: string): { root: string; own: string } {
  const root = mkdtempSync(path.join(os.tmpdir(), 'aleph-cgroup-'));
  dirs.push(root);
  const own = path.join(root, 'user.slice', 'app');
  mkdirSync(own, { recursive: true });
  writeFileSync(path.join(own, 'cgroup.controllers'), `${controllers}\n`);
  writeFileSync(path.join(own, 'cgroup.subtree_control'), '');
  writeFileSync(path.join(own, 'cgroup.procs'), '');
  return { root, own };
}

describe.runIf(process.platform === 'linux')('detectCgroup [Linux paths; runs on Linux only]', () => {
  it('is available with a writable subtree that has memory and pids', () => {
    const { root, own } = fakeTree('cpu memory pids');
    const info = detectCgroup(root, '/user.slice/app');
    expect(info).toMatchObject({ available: true, own, controllers: ['cpu', 'memory', 'pids'] });
  });

  it('says which controllers are missing and how to fix it (the hybrid case)', () => {
    const { root } = fakeTree('cpu io');
    const info = detectCgroup(root, '/user.slice/app');
    expect(info.available).toBe(false);
    expect(info.detail).toMatch(/lacks the memory and pids controllers/);
    expect(info.fix).toMatch(/Delegate=yes/);
  });
});

describe.runIf(process.platform === 'linux')(
  'CgroupManager (against a fake cgroupfs) [Linux paths; runs on Linux only]',
  () => {
    it('moves itself into a child, enables controllers, writes the limits, kills and removes the leaf', async () => {
      const { root, own } = fakeTree('cpu memory pids');
      const manager = new CgroupManager(detectCgroup(root, '/user.slice/app'));
      const leaf = await manager.createLeaf({
        memoryMaxBytes: 256 * 1024 * 1024,
        pidsMax: 50,
        cpuQuotaPercent: 50,
      });
      expect(readFileSync(path.join(own, 'aleph-supervisor', 'cgroup.procs'), 'utf8')).toBe(
        `${process.pid}\n`,
      );
      expect(readFileSync(path.join(own, 'cgroup.subtree_control'), 'utf8')).toBe('+memory +pids +cpu');
      expect(path.dirname(leaf)).toBe(own);
      expect(readFileSync(path.join(leaf, 'pids.max'), 'utf8')).toBe('50');
      expect(readFileSync(path.join(leaf, 'memory.max'), 'utf8')).toBe(String(256 * 1024 * 1024));
      expect(readFileSync(path.join(leaf, 'cpu.max'), 'utf8')).toBe('50000 100000');
      // A real kernel empties the leaf on cgroup.kill; the fake just records it.
      rmSync(path.join(leaf, 'pids.max'));
      rmSync(path.join(leaf, 'memory.max'));
      rmSync(path.join(leaf, 'cpu.max'));
      const kill = manager.destroyLeaf(leaf);
      await new Promise((r) => setTimeout(r, 5));
      rmSync(path.join(leaf, 'cgroup.kill'), { force: true });
      await kill;
      expect(existsSync(leaf)).toBe(false);
    });
  },
);
