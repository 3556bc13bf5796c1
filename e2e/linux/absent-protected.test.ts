import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { createLinuxDriver, resolveHelperPath } from '@aleph/driver-linux';
import { ApprovalGate, sessionKeyToFilename, WorkspaceSandbox } from '@aleph/sandbox-core';
import { afterAll, describe, expect, it } from 'vitest';
import { linuxStack, REQUIRED, tempDirs } from '../support.js';

/**
 * Missing protected paths get no placeholder (issue 23 §4, 28 §6–7), in the driver of this process (the
 * tier this host picks): the command sees nothing in their place, what it makes there is moved after the
 * run to the session's quarantine (outside the workspace, never executable), a workspace on another
 * filesystem gets a copy there, and a run the launcher refuses leaves nothing. The state directory keeps
 * no per-root record for tiers 1–2.
 */
const stack = linuxStack();
const tempDir = tempDirs();
const approvalGate = new ApprovalGate({
  requester: { requestApproval: async () => ({ outcome: 'approved' }) },
});
const isRoot = process.getuid?.() === 0;

describe.skipIf(!stack.ok && !stack.missing.some((m) => REQUIRED.has(m)))(
  `missing protected paths${stack.ok ? '' : ` [skipped: ${stack.reason}]`}`,
  () => {
    const stateDir = tempDir('aleph-e2e-absent-state-');
    const driver = createLinuxDriver({ stateDir });
    const quarantineOf = (session: string) =>
      path.join(stateDir, 'quarantine', sessionKeyToFilename(session));
    const sandboxes: WorkspaceSandbox[] = [];
    afterAll(async () => {
      for (const s of sandboxes) await s.dispose();
    });
    const inWorkspace = async (workspace: string, session: string, script: string) => {
      const sandbox = new WorkspaceSandbox({
        driver,
        workspaceRoot: workspace,
        approvalGate,
        workspaceFor: () => workspace,
      });
      sandboxes.push(sandbox);
      const out = await sandbox.execute({
        sessionId: session,
        program: 'sh',
        args: ['-c', script],
        capabilities: { spawnSubprocess: true },
      });
      expect(out.exitCode, Buffer.from(out.stderr).toString()).toBe(0);
      return {
        out: Buffer.from(out.stdout).toString().trim(),
        details: out.details as Record<string, unknown>,
      };
    };

    it('the command sees no placeholder; what it makes there goes to the quarantine, outside the workspace and not executable, one copy per path', async () => {
      const ws = tempDir('aleph-e2e-absent-ws-');
      const first = await inWorkspace(
        ws,
        'absent',
        'ls -A; mkdir .aleph && printf "#!/bin/sh\\necho first\\n" > .aleph/run.sh && chmod 755 .aleph/run.sh && echo x > .envrc',
      );
      expect(first.out).toBe('');
      expect(readdirSync(ws)).toEqual([]);
      const q = quarantineOf('absent');
      expect(first.details.quarantine).toEqual([
        { path: path.join(ws, '.aleph'), movedTo: path.join(q, ws, '.aleph') },
        { path: path.join(ws, '.envrc'), movedTo: path.join(q, ws, '.envrc') },
      ]);
      await inWorkspace(ws, 'absent', 'mkdir .aleph && printf "#!/bin/sh\\necho second\\n" > .aleph/run.sh');
      expect(readFileSync(path.join(q, ws, '.aleph/run.sh'), 'utf8')).toMatch(/second/);
      expect(statSync(path.join(q, ws, '.aleph/run.sh')).mode & 0o7777).toBe(0o600);
      expect(statSync(q).mode & 0o7777).toBe(0o700);
      expect(readdirSync(ws)).toEqual([]);
    });

    it('the state directory keeps no record of a root for tiers 1 and 2', async () => {
      const ws = tempDir('aleph-e2e-absent-records-');
      await inWorkspace(ws, 'records', 'true');
      expect(readdirSync(stateDir).filter((n) => /^(stubs|park|root)-/.test(n))).toEqual([]);
    });

    it.skipIf(!isRoot)(
      'a workspace on another filesystem (a tmpfs): what is set aside is copied to the quarantine and removed [root only: mount]',
      async () => {
        const mnt = tempDir('aleph-e2e-absent-tmpfs-');
        execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=8m', 'aleph-absent', mnt]);
        try {
          const ws = path.join(mnt, 'ws');
          mkdirSync(ws);
          const r = await inWorkspace(
            ws,
            'tmpfs',
            'mkdir -p .claude && echo planted > .claude/settings.json && echo made',
          );
          expect(r.out).toBe('made');
          expect(readdirSync(ws)).toEqual([]);
          const copy = path.join(quarantineOf('tmpfs'), ws, '.claude/settings.json');
          expect(readFileSync(copy, 'utf8')).toBe('planted\n');
          expect(lstatSync(copy).dev).not.toBe(lstatSync(ws).dev);
        } finally {
          execFileSync('umount', [mnt]);
        }
      },
    );

    it('a run the launcher refuses after it opened the paths leaves nothing in the workspace', () => {
      const ws = tempDir('aleph-e2e-absent-refused-');
      const state = tempDir('aleph-e2e-absent-refused-state-');
      // The launcher opens the root and its protected paths, then refuses (@UID without a uid).
      const r = spawnSync(
        resolveHelperPath(),
        [
          '--launch',
          '--state',
          state,
          '--open',
          'p0',
          ws,
          '--open-in',
          'p1',
          'p0',
          '.envrc',
          'ro',
          '--open-in',
          'p2',
          'p0',
          '.git',
          'way',
          '--open-in',
          'p3',
          'p2',
          'config',
          'ro',
          '--check-root',
          'p0',
          '--',
          '/bin/echo',
          '@UID',
        ],
        { encoding: 'utf8' },
      );
      expect(r.status).toBe(125);
      expect(r.stderr).toMatch(/@UID used without --uid-range/);
      expect(readdirSync(ws)).toEqual([]);
      expect(existsSync(path.join(ws, '.envrc'))).toBe(false);
    });
  },
);
