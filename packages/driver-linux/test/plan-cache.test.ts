import { mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { which } from '../src/host/which.js';
import { checkHelperSync, createLinuxDriver, resolveHelperPath } from '../src/index.js';
import { RecordingView, stillAnswers } from '../src/mounts/fs-view.js';
import { tempDirs } from './temp-dirs.js';

const tempDir = tempDirs('aleph-plan-cache-');

describe('RecordingView / stillAnswers', () => {
  it('holds while the filesystem gives the same answers, and not after any of them changes', () => {
    const dir = tempDir();
    const view = new RecordingView();
    expect(view.lstat(path.join(dir, 'a'))).toBeUndefined();
    expect(view.lstat(dir)?.type).toBe('dir');
    expect(view.readdir(dir)).toEqual([]);
    expect(stillAnswers(view.queries)).toBe(true);
    writeFileSync(path.join(dir, 'a'), '');
    expect(stillAnswers(view.queries)).toBe(false);
    const again = new RecordingView();
    again.lstat(path.join(dir, 'a'));
    rmSync(path.join(dir, 'a'));
    symlinkSync('/etc', path.join(dir, 'a'));
    expect(stillAnswers(again.queries)).toBe(false);
  });
});

const usable =
  process.platform === 'linux' && which('bwrap') !== null && checkHelperSync(resolveHelperPath()).ok;
describe.skipIf(!usable)(
  `the driver's plan cache${usable ? '' : ' [skipped: bwrap or the helper is missing]'}`,
  () => {
    const driver = createLinuxDriver({ stateDir: tempDir(), homeRoot: tempDir() });
    afterAll(() => driver.dispose?.());
    const caps = { fsRead: [], fsWrite: [], network: { kind: 'none' as const }, spawnSubprocess: true };

    it('reuses a plan while nothing it read changed, and replans when the workspace changes', async () => {
      const ws = tempDir();
      const ctx = { sessionId: 'plan', workspace: ws };
      const first = await driver.profileFor(caps, ws, ctx);
      expect(await driver.profileFor(caps, ws, ctx)).toBe(first);
      expect(first.stubs.map((s) => path.basename(s.path))).toContain('.npmrc');
      // A protected path that now exists is mounted read-only instead of stubbed.
      writeFileSync(path.join(ws, '.npmrc'), 'x=1\n');
      const second = await driver.profileFor(caps, ws, ctx);
      expect(second).not.toBe(first);
      expect(second.stubs.map((s) => path.basename(s.path))).not.toContain('.npmrc');
      // A repository created since: its control files are planned.
      mkdirSync(path.join(ws, '.git', 'hooks'), { recursive: true });
      const third = await driver.profileFor(caps, ws, ctx);
      expect(third).not.toBe(second);
      expect(third.mounts.some((m) => m.includes('.git/hooks'))).toBe(true);
      // Other capabilities are another plan.
      const other = await driver.profileFor({ ...caps, spawnSubprocess: false }, ws, ctx);
      expect(other).not.toBe(third);
    });
  },
);
