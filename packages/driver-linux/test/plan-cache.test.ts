import { execFileSync } from 'node:child_process';
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
      // Every protected path is planned, there or not: the launcher decides from what it finds.
      expect(first.protectedPaths).toContain(path.join(ws, '.npmrc'));
      expect(first.protectedPaths).toContain(path.join(ws, '.git/hooks'));
      writeFileSync(path.join(ws, '.npmrc'), 'x=1\n');
      const second = await driver.profileFor(caps, ws, ctx);
      expect(second).not.toBe(first);
      expect(second.launch).toEqual(first.launch);
      // A protected path that became a symlink is refused (it could be swapped).
      mkdirSync(path.join(ws, '.git'));
      symlinkSync('/etc', path.join(ws, '.git', 'hooks'));
      await expect(driver.profileFor(caps, ws, ctx)).rejects.toThrow(/is a symlink/);
      rmSync(path.join(ws, '.git', 'hooks'));
      // Other capabilities are another plan.
      const other = await driver.profileFor({ ...caps, spawnSubprocess: false }, ws, ctx);
      expect(other).not.toBe(second);
    });

    it('the launcher keeps a change journal only where the host can and changeJournal is not false', async () => {
      const ws = tempDir();
      const ctx = { sessionId: 'journal', workspace: ws };
      const walking = createLinuxDriver({ stateDir: tempDir(), homeRoot: tempDir(), changeJournal: false });
      try {
        expect((await walking.profileFor(caps, ws, ctx)).launch).not.toContain('--journal');
        // The helper says whether this host can keep one (a root host with fanotify); the default follows.
        const said = JSON.parse(execFileSync(resolveHelperPath(), ['--probe'], { encoding: 'utf8' }));
        const can = said.journal === 'ok';
        expect((await driver.profileFor(caps, ws, ctx)).launch.includes('--journal')).toBe(can);
      } finally {
        await walking.dispose?.();
      }
    });
  },
);
