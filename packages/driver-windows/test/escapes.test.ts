import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { ApprovalGate, type SandboxCapabilitiesInput, WorkspaceSandbox } from '@aleph/sandbox-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWindowsDriver, type WindowsDriver } from '../src/index.js';

// Escape attempts inside a real AppContainer + JobObject. They run on Windows (the CI's Windows job);
// elsewhere the suite is skipped with the reason in its name.
const onWindows = process.platform === 'win32';

describe.runIf(onWindows)(
  `Windows sandbox escape attempts${onWindows ? '' : ` [skipped: needs Windows, this is ${process.platform}]`}`,
  () => {
    let root: string;
    let outside: string;
    let driver: WindowsDriver;
    let sandbox: WorkspaceSandbox;
    beforeAll(() => {
      root = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'aleph-win-escape-')));
      outside = path.join(root, 'outside');
      mkdirSync(outside);
      writeFileSync(path.join(outside, 'secret.txt'), 'outside-secret\r\n');
      driver = createWindowsDriver({ requireAppContainer: true });
      sandbox = new WorkspaceSandbox({
        driver,
        workspaceRoot: path.join(root, 'workspaces'),
        approvalGate: new ApprovalGate({
          requester: { requestApproval: async () => ({ outcome: 'approved' }) },
        }),
      });
    });
    afterAll(async () => {
      await driver?.dispose?.();
      rmSync(root, { recursive: true, force: true });
    });
    const cmd = (script: string, capabilities: SandboxCapabilitiesInput = {}) =>
      sandbox.execute({ sessionId: 'escape', program: 'cmd.exe', args: ['/d', '/c', script], capabilities });
    const node = (code: string, capabilities: SandboxCapabilitiesInput = {}) =>
      sandbox.execute({ sessionId: 'escape', program: process.execPath, args: ['-e', code], capabilities });

    it('runs an ordinary command in an AppContainer', async () => {
      const out = await cmd('echo hello> f.txt && type f.txt');
      expect(out.exitCode, out.stderrText).toBe(0);
      expect(out.stdoutText.trim()).toBe('hello');
      expect(out.details).toMatchObject({ tier: 'appcontainer' });
    });

    it('cannot write or read outside the workspace', async () => {
      const out = await cmd(`echo x> "${outside}\\w.txt" & type "${outside}\\secret.txt"`);
      expect(existsSync(path.join(outside, 'w.txt'))).toBe(false);
      expect(out.stdoutText).not.toMatch(/outside-secret/);
    });

    it('cannot write into .git', async () => {
      const ws = (await sandbox.forSession('escape')).cwd;
      mkdirSync(path.join(ws, '.git', 'hooks'), { recursive: true });
      writeFileSync(path.join(ws, '.git', 'config'), '[core]\n');
      await cmd('echo evil> .git\\hooks\\pre-commit & echo evil>> .git\\config & rmdir /s /q .git');
      expect(existsSync(path.join(ws, '.git', 'hooks', 'pre-commit'))).toBe(false);
      expect(readFileSync(path.join(ws, '.git', 'config'), 'utf8')).toBe('[core]\n');
    });

    it('cannot start a child process when spawnSubprocess is false', async () => {
      const out = await cmd('cmd.exe /d /c echo child-ran');
      expect(out.stdoutText).not.toMatch(/child-ran/);
    });

    it('network none: cannot reach a host loopback port', async () => {
      const server = net.createServer((s) => s.end('reached\n'));
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      const port = (server.address() as net.AddressInfo).port;
      try {
        const out = await node(
          `require('net').connect(${port},'127.0.0.1').on('data',d=>process.stdout.write(d)).on('error',e=>console.log(e.code))`,
        );
        expect(out.stdoutText).not.toMatch(/reached/);
      } finally {
        server.close();
      }
    });

    it('the memory limit stops a large allocation', async () => {
      const out = await node(
        'const b = Buffer.alloc(768 * 1024 * 1024, 1); console.log("allocated", b.length)',
        {
          maxMemoryMb: 256,
        },
      );
      expect(out.stdoutText).not.toMatch(/allocated/);
    });
  },
);
