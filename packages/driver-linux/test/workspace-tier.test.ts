import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { type SandboxOutput, WorkspaceSandbox } from '@aleph/sandbox-core';
import { afterAll, describe, expect, it } from 'vitest';
import { clonedPaths } from '../src/driver/idmap-check.js';
import { which } from '../src/host/which.js';
import {
  checkHelperSync,
  createLinuxDriver,
  type LinuxDriverOptions,
  resolveHelperPath,
} from '../src/index.js';
import { tempDirs } from './temp-dirs.js';

const tempDir = tempDirs('aleph-workspace-tier-');
const helper = resolveHelperPath();
const isRoot = process.getuid?.() === 0;
const usable = process.platform === 'linux' && which('bwrap') !== null && checkHelperSync(helper).ok;

describe('clonedPaths', () => {
  it('names the opened paths a plan clones, a path opened beneath another by its top path', () => {
    const launch = ['--state', '/s', '--open', 'p0', '/ws', '--open-in', 'p1', 'p0', '.git', 'need'];
    expect(
      clonedPaths([...launch, '--open', 'p2', '/ro', '--clone', 'p0', 'rw', '--clone', 'p1', 'ro']),
    ).toEqual(['/ws']);
    expect(clonedPaths(launch)).toEqual([]);
  });
});

/** A fresh mount of `type` on an `aleph-` directory, unmounted when the file ends. */
const mounted: string[] = [];
afterAll(() => {
  for (const dir of mounted) spawnSync('umount', [dir]);
});
function mountFs(type: 'ramfs' | 'tmpfs'): string {
  const dir = path.join(tempDir(), type);
  mkdirSync(dir);
  const r = spawnSync('mount', ['-t', type, '-o', 'mode=0755', `aleph-${type}`, dir]);
  if (r.status !== 0) throw new Error(`mount -t ${type} failed: ${r.stderr}`);
  mounted.push(dir);
  return dir;
}

async function runIn(workspace: string, options: LinuxDriverOptions = {}): Promise<SandboxOutput> {
  const driver = createLinuxDriver({
    stateDir: tempDir(),
    homeRoot: tempDir(),
    forkServer: false,
    ...options,
  });
  try {
    const sandbox = new WorkspaceSandbox({ driver, workspaceRoot: tempDir(), workspaceFor: () => workspace });
    return await sandbox.execute({
      sessionId: 's',
      program: 'tee',
      args: ['f'],
      stdin: 'written\n',
    });
  } finally {
    await driver.dispose?.();
  }
}

describe.skipIf(!usable || !isRoot)(
  `the tier chosen for the workspace${usable && isRoot ? '' : ' [skipped: needs root (to mount), bwrap and the helper]'}`,
  () => {
    it('a workspace on a filesystem that cannot be idmapped (ramfs) runs in a weaker tier, which details name', async () => {
      // The control: the helper's probe, doing what the launcher does, is refused there.
      const ws = mountFs('ramfs');
      const said = JSON.parse(spawnSync(helper, ['--probe-idmap', ws], { encoding: 'utf8' }).stdout);
      expect(said[0]).toMatch(/^mount_setattr: /);
      const out = await runIn(ws);
      expect(out.stderrText).toBe('');
      expect(out.exitCode).toBe(0);
      expect(out.stdoutText).toBe('written\n');
      expect(out.details?.tier).not.toBe('namespaces');
      expect(String(out.details?.tierFallback)).toMatch(/tier 1 cannot serve .*ramfs: mount_setattr: /);
      expect(
        ((out.details?.notEnforced ?? []) as string[]).some((g) => g.startsWith('workspace-tier: ')),
      ).toBe(true);
      expect(readFileSync(path.join(ws, 'f'), 'utf8')).toBe('written\n');
      expect(statSync(path.join(ws, 'f')).uid).toBe(0);
    });

    it('refused with the reason and the fix when minimum_tier = 1, leaving the workspace as it was', async () => {
      const ws = mountFs('ramfs');
      await expect(runIn(ws, { minimumTier: 1 })).rejects.toThrow(
        /tier 1 cannot serve .*ramfs.*minimum_tier = 1 allows no weaker tier; fix: .*minimum_tier = 2/,
      );
      expect(readdirSync(ws)).toEqual([]);
    });

    it('a tmpfs workspace runs in tier 1 where the kernel idmaps tmpfs (Linux >= 6.3), else in a weaker tier that says why', async () => {
      const ws = mountFs('tmpfs');
      const said = JSON.parse(spawnSync(helper, ['--probe-idmap', ws], { encoding: 'utf8' }).stdout)[0];
      const out = await runIn(ws);
      expect(out.exitCode).toBe(0);
      expect(readFileSync(path.join(ws, 'f'), 'utf8')).toBe('written\n');
      if (said === 'ok') {
        expect(out.details?.tier).toBe('namespaces');
        expect(out.details?.tierFallback).toBeUndefined();
      } else {
        expect(out.details?.tier).not.toBe('namespaces');
        expect(String(out.details?.tierFallback)).toMatch(/tmpfs/);
      }
    });
  },
);
