import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { createLinuxDriver } from '@aleph/driver-linux';
import { ApprovalGate, WorkspaceSandbox } from '@aleph/sandbox-core';
import { afterAll, describe, expect, it } from 'vitest';
import { linuxStack, REQUIRED, tempDirs } from '../support.js';

/**
 * Parked stubs (native/linux/park.c): a protected path's stub is renamed into a private directory of the
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
