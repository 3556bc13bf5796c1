import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { createLinuxDriver } from '@aleph/driver-linux';
import { ApprovalGate, WorkspaceSandbox } from '@aleph/sandbox-core';
import { afterAll, describe, expect, it } from 'vitest';
import { linuxStack, REQUIRED, tempDirs } from '../support.js';

/**
 * Parked stubs (native/linux/launcher/park.c): a protected path's stub is renamed into a private directory of the
 * state directory after a run and back out for the next one, instead of being created and removed each
 * time. Checked from the host: the workspace holds no stub after a run, the next run gets the same inode,
 * a parked stub something wrote into is set aside and never mounted, and a workspace on another mount
 * (where a rename cannot reach the park) gets fresh stubs that are removed again.
 */
const stack = linuxStack();
const tempDir = tempDirs();
const approvalGate = new ApprovalGate({
  requester: { requestApproval: async () => ({ outcome: 'approved' }) },
});

describe.skipIf(!stack.ok && !stack.missing.some((m) => REQUIRED.has(m)))(
  `parked protected-path stubs${stack.ok ? '' : ` [skipped: ${stack.reason}]`}`,
  () => {
    const stateDir = tempDir('aleph-e2e-park-state-');
    const driver = createLinuxDriver({ stateDir });
    const sandboxes: WorkspaceSandbox[] = [];
    afterAll(async () => {
      for (const s of sandboxes) await s.dispose();
    });
    const inWorkspace = async (workspaceRoot: string, script: string) => {
      const sandbox = new WorkspaceSandbox({ driver, workspaceRoot, approvalGate });
      sandboxes.push(sandbox);
      const out = await sandbox.execute({
        sessionId: 'park',
        program: 'sh',
        args: ['-c', script],
        capabilities: { spawnSubprocess: true },
      });
      expect(out.exitCode, Buffer.from(out.stderr).toString()).toBe(0);
      return { out: Buffer.from(out.stdout).toString().trim(), cwd: (await sandbox.forSession('park')).cwd };
    };
    const parks = () => readdirSync(stateDir).filter((n) => n.startsWith('park-'));
    const residue = (dir: string) => readdirSync(dir).filter((n) => n !== '.git');

    it('a stub goes to the park after the run and the next run reuses it; the workspace holds none after either', async () => {
      const root = tempDir('aleph-e2e-park-ws-');
      const first = await inWorkspace(root, 'stat -c %i .aleph .npmrc');
      expect(residue(first.cwd)).toEqual([]);
      expect(parks()).toHaveLength(1);
      const park = path.join(stateDir, parks()[0] as string);
      expect(readdirSync(park)).toEqual(expect.arrayContaining(['d.aleph', 'f.npmrc']));
      expect(String(statSync(path.join(park, 'd.aleph')).ino)).toBe(first.out.split('\n')[0]);
      const second = await inWorkspace(root, 'stat -c %i .aleph .npmrc');
      expect(second.out).toBe(first.out);
      expect(residue(second.cwd)).toEqual([]);
    });

    it('a parked stub written into is set aside, and the run gets an empty one', async () => {
      const root = tempDir('aleph-e2e-park-spoil-');
      await inWorkspace(root, 'true');
      const park = path.join(stateDir, parks()[0] as string);
      const planted = path.join(park, 'd.aleph');
      writeFileSync(path.join(planted, 'config.toml'), '[sandbox]\n');
      writeFileSync(path.join(park, 'f.npmrc'), 'registry=http://127.0.0.1:9/\n');
      const { out, cwd } = await inWorkspace(root, 'ls -A .aleph; cat .npmrc; echo end');
      expect(out).toBe('end');
      expect(residue(cwd)).toEqual([]);
      const aside = readdirSync(park).filter((n) => n.startsWith('spoiled-'));
      expect(aside).toHaveLength(2);
      expect(readdirSync(path.join(park, 'd.aleph'))).toEqual([]);
    });

    it('the state directory keeps no stub record of a root once its last run is over, overlapping runs included', async () => {
      const records = () => readdirSync(stateDir).filter((n) => n.startsWith('stubs-'));
      const root = tempDir('aleph-e2e-park-records-');
      await inWorkspace(root, 'true');
      expect(records()).toEqual([]);
      const sandbox = new WorkspaceSandbox({ driver, workspaceRoot: root, approvalGate });
      sandboxes.push(sandbox);
      const cwd = (await sandbox.forSession('park')).cwd;
      const run = (script: string) =>
        sandbox.execute({
          sessionId: 'park',
          program: 'sh',
          args: ['-c', script],
          capabilities: { spawnSubprocess: true },
        });
      const first = run(
        'touch started; i=0; while [ ! -e done ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done',
      );
      for (let i = 0; i < 200 && !existsSync(path.join(cwd, 'started')); i++) await sleep(25);
      // While a run uses the root, its record is there (mutex, users, list)…
      expect(records()).toHaveLength(3);
      const second = await run('test -d .aleph && touch done && echo second');
      expect(Buffer.from(second.stdout).toString()).toBe('second\n');
      expect(records(), 'the first run still uses the root').toHaveLength(3);
      expect((await first).exitCode).toBe(0);
      // …and goes with the last one, with every stub.
      expect(records()).toEqual([]);
      expect(residue(cwd).sort()).toEqual(['done', 'started']);
    });

    it("runs overlapping in one repository are never refused over another run's stub (planned while it was there, parked before the launcher opened it)", async () => {
      const root = tempDir('aleph-e2e-park-overlap-');
      execFileSync('git', ['init', '-q', root]);
      const sandbox = new WorkspaceSandbox({
        driver,
        workspaceRoot: root,
        approvalGate,
        workspaceFor: () => root,
      });
      sandboxes.push(sandbox);
      const loop = async (k: number) => {
        const failures: string[] = [];
        for (let i = 0; i < 12; i++) {
          try {
            const out = await sandbox.execute({ sessionId: `overlap-${k}`, program: 'true' });
            if (out.exitCode !== 0)
              failures.push(`exit ${out.exitCode}: ${Buffer.from(out.stderr).toString()}`);
          } catch (error) {
            failures.push((error as Error).message);
          }
        }
        return failures;
      };
      const failures = (await Promise.all([0, 1, 2].map(loop))).flat();
      expect(failures).toEqual([]);
      expect(residue(root)).toEqual([]);
    });

    it('a workspace on another mount gets fresh stubs, removed after the run', async () => {
      if (process.getuid?.() !== 0) return;
      const mnt = tempDir('aleph-e2e-park-tmpfs-');
      execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=8m', 'aleph-park', mnt]);
      try {
        const root = path.join(mnt, 'ws');
        mkdirSync(root);
        const { out, cwd } = await inWorkspace(root, 'test -d .aleph && test -f .envrc && echo stubbed');
        expect(out).toBe('stubbed');
        expect(residue(cwd)).toEqual([]);
        expect(parks().every((p) => !p.startsWith(`park-${statSync(mnt).dev.toString(16)}-`))).toBe(true);
      } finally {
        execFileSync('umount', [mnt]);
      }
    });
  },
);
