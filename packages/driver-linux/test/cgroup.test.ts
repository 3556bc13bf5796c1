import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmdirSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type CgroupStep, cgroupFix, exerciseCgroup, launcherRunIn } from '../src/host/cgroup.js';
import { CgroupManager, checkHelperSync, detectCgroup, resolveHelperPath } from '../src/index.js';

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
    const info = detectCgroup(root, '/user.slice/app', '0::/user.slice/app\n');
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

const HYBRID =
  '12:pids:/user.slice\n4:memory:/user.slice/app\n1:name=systemd:/user.slice\n0::/user.slice/app\n';
const UNIFIED = '0::/user.slice/app\n';

describe.runIf(process.platform === 'linux')('detectCgroup: what the files say [Linux paths]', () => {
  it('a hybrid host (memory and pids on cgroup v1) is named so, with the boot setting that fixes it', () => {
    const { root } = fakeTree('');
    const info = detectCgroup(root, '/user.slice/app', HYBRID);
    expect(info.available).toBe(false);
    expect(info.detail).toMatch(/a hybrid host: .* memory and pids are cgroup v1 controllers/);
    expect(info.fix).toMatch(/systemd\.unified_cgroup_hierarchy=1/);
  });

  it('a unified host whose cgroup has no controllers delegated says delegation is the fix', () => {
    const { root } = fakeTree('cpu io');
    const info = detectCgroup(root, '/user.slice/app', UNIFIED);
    expect(info.detail).toMatch(/not delegated to it/);
    expect(info.fix).toMatch(/Delegate=yes/);
    expect(info.fix).not.toMatch(/unified_cgroup_hierarchy/);
  });

  it('the real host: the detail agrees with /proc/self/cgroup and the mounts', () => {
    const info = detectCgroup();
    const proc = readFileSync('/proc/self/cgroup', 'utf8');
    if (/^\d+:(?:[^:]*,)?memory(?:,[^:]*)?:/m.test(proc)) {
      // memory is a cgroup v1 controller here (this machine: a hybrid host), so no v2 leaf can limit it.
      expect(info.available).toBe(false);
      expect(info.detail).toMatch(/hybrid host|no cgroup v2 hierarchy/);
      expect(info.fix).toMatch(/unified_cgroup_hierarchy/);
    } else if (info.mount === null) {
      expect(info.detail).toMatch(/no cgroup v2 hierarchy is mounted/);
    } else {
      const own = readFileSync(path.join(info.own as string, 'cgroup.controllers'), 'utf8');
      expect(info.available).toBe(/\bmemory\b/.test(own) && /\bpids\b/.test(own));
    }
  });
});

describe.runIf(process.platform === 'linux')(
  'exerciseCgroup: using the cgroup as a run would [Linux paths]',
  () => {
    /** A "kernel" for the move: what /proc/PID/cgroup would say, and what it saw of the leaf. */
    const kernel = (answer: (leaf: string, root: string) => string, root: string) => {
      const seen: Record<string, string> = {};
      const runIn = async (leaf: string) => {
        for (const f of ['pids.max', 'memory.max']) seen[f] = readFileSync(path.join(leaf, f), 'utf8');
        return answer(leaf, root);
      };
      return { seen, runIn };
    };

    /** A kernel's rmdir of a leaf also drops its interface files; a plain directory needs them removed. */
    class FakeKernelManager extends CgroupManager {
      override async destroyLeaf(leaf: string): Promise<void> {
        rmSync(leaf, { recursive: true, force: true });
      }
    }
    const leaves = (own: string) =>
      readdirSync(own).filter((n) => n.startsWith('aleph-') && n !== 'aleph-supervisor');

    it('a leaf that takes the limits and a process: available, and the leaf is gone afterwards', async () => {
      const { root, own } = fakeTree('memory pids');
      const k = kernel((leaf, r) => `/${path.relative(r, leaf)}`, root);
      const manager = new FakeKernelManager(detectCgroup(root, '/user.slice/app', UNIFIED));
      const info = await exerciseCgroup(manager, k.runIn);
      expect(info.available, info.detail).toBe(true);
      expect(info.detail).toMatch(
        /a leaf took pids\.max = 16 and memory\.max = 268435456, a process moved into it/,
      );
      expect(k.seen).toEqual({ 'pids.max': '16', 'memory.max': String(256 * 1024 * 1024) });
      expect(leaves(own)).toEqual([]);
    });

    it('a leaf that cannot be removed afterwards makes the cgroup unavailable (a plain directory keeps its files)', async () => {
      const { root } = fakeTree('memory pids');
      const k = kernel((leaf, r) => `/${path.relative(r, leaf)}`, root);
      const info = await exerciseCgroup(
        new CgroupManager(detectCgroup(root, '/user.slice/app', UNIFIED)),
        k.runIn,
      );
      expect(info.available).toBe(false);
      expect(info.detail).toMatch(/could not be removed/);
      expect(info.fix).toMatch(/remove it by hand/);
    });

    it('a process that does not land in the leaf: unavailable, naming where it was, with the fix', async () => {
      const { root } = fakeTree('memory pids');
      const k = kernel(() => '/user.slice/app/aleph-supervisor', root);
      const info = await exerciseCgroup(
        new FakeKernelManager(detectCgroup(root, '/user.slice/app', UNIFIED)),
        k.runIn,
      );
      expect(info.available).toBe(false);
      expect(info.detail).toMatch(
        /was in \/user\.slice\/app\/aleph-supervisor .*not \/user\.slice\/app\/aleph-/,
      );
      expect(info.detail).toMatch(/rlimits are used instead$/);
      expect(info.fix).toMatch(/did not move the process into the leaf/);
    });

    it('a step the system refuses is named with its error (here the controllers file is not a file)', async () => {
      const { root, own } = fakeTree('memory pids');
      rmSync(path.join(own, 'cgroup.subtree_control'));
      mkdirSync(path.join(own, 'cgroup.subtree_control'));
      const k = kernel(() => '/never', root);
      const info = await exerciseCgroup(
        new CgroupManager(detectCgroup(root, '/user.slice/app', UNIFIED)),
        k.runIn,
      );
      expect(info.available).toBe(false);
      expect(info.detail).toMatch(
        /enabling memory, pids for the children in \(.*cgroup\.subtree_control\) failed: EISDIR/,
      );
      expect(k.seen).toEqual({});
    });

    // The fix for each step and error, as data.
    const fixes: [CgroupStep, string, RegExp][] = [
      ['controllers', 'EACCES', /is not delegated to this user: .*Delegate=yes/],
      ['supervisor', 'EPERM', /is not delegated to this user/],
      ['leaf', 'EROFS', /is not delegated to this user: .*writable \/sys\/fs\/cgroup/],
      ['controllers', 'EBUSY', /holds processes besides this one/],
      ['controllers', 'ENOENT', /echo \+memory \+pids > \/c\/user\.slice\/cgroup\.subtree_control/],
      ['limit', 'EINVAL', /not available below \/c\/user\.slice\/app/],
      ['move', 'ESRCH', /did not move the process into the leaf/],
      ['remove', 'EBUSY', /could not be removed/],
    ];
    for (const [failedStep, code, fix] of fixes)
      it(`the fix for ${failedStep} failing with ${code}`, () => {
        expect(cgroupFix({ step: failedStep, code }, '/c/user.slice/app')).toMatch(fix);
      });
  },
);

// The move and its confirmation on a real kernel: a child of a cgroup v2 mount, the launcher moving itself
// into it (as it does for a run) and cat reading its own /proc/self/cgroup.
const v2 = detectCgroup().mount;
const helper = resolveHelperPath();
const realMove = process.getuid?.() === 0 && v2 !== null && checkHelperSync(helper).ok;
describe.runIf(realMove)(
  `the launcher's move into a real cgroup v2 directory${realMove ? '' : ' [skipped: needs root, a cgroup v2 mount and the built helper]'}`,
  () => {
    it('a process run with --launch --enter-cgroup is in that cgroup, by its /proc/self/cgroup', async () => {
      const dir = path.join(v2 as string, `aleph-test-${process.pid}`);
      mkdirSync(dir);
      try {
        expect(await launcherRunIn(helper)(dir)).toBe(`/${path.basename(dir)}`);
      } finally {
        rmdirSync(dir);
      }
    });
  },
);
