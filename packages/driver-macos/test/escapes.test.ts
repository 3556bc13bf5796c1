import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import {
  ApprovalGate,
  type SandboxCapabilitiesInput,
  type SandboxOutput,
  WorkspaceSandbox,
} from '@aleph/sandbox-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMacosDriver, type MacosDriver } from '../src/index.js';

// Escape attempts inside the real Seatbelt sandbox. They run on macOS (the CI's macOS job); elsewhere the
// suite is skipped with the reason in its name.
const onMac = process.platform === 'darwin';

describe.runIf(onMac)(
  `macOS sandbox escape attempts${onMac ? '' : ` [skipped: needs macOS and sandbox-exec, this is ${process.platform}]`}`,
  () => {
    let root: string;
    let outside: string;
    let vault: string;
    let driver: MacosDriver;
    let sandbox: WorkspaceSandbox;
    beforeAll(() => {
      root = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'aleph-macos-escape-')));
      outside = path.join(root, 'outside');
      vault = path.join(root, 'vault');
      mkdirSync(outside);
      mkdirSync(vault);
      writeFileSync(path.join(outside, 'secret.txt'), 'outside-secret\n');
      writeFileSync(path.join(vault, 'token'), 'vault-secret\n');
      driver = createMacosDriver({ vaultPaths: [vault] });
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
    const sh = (script: string, capabilities: SandboxCapabilitiesInput = {}, sessionId = 'escape') =>
      sandbox.execute({
        sessionId,
        program: '/bin/sh',
        args: ['-c', script],
        capabilities: { spawnSubprocess: true, ...capabilities },
      });
    const workspace = async (sessionId = 'escape') => (await sandbox.forSession(sessionId)).cwd;

    it('runs an ordinary command', async () => {
      const out = await sh('echo hello > f.txt && cat f.txt && /usr/bin/id -u');
      expect(out.exitCode, out.stderrText).toBe(0);
      expect(out.stdoutText).toMatch(/^hello\n\d+\n$/);
    });

    it('cannot write or read outside, and the failure names the denial', async () => {
      const out = await sh(`echo x > '${outside}/w.txt'; cat '${outside}/secret.txt'`);
      expect(existsSync(path.join(outside, 'w.txt'))).toBe(false);
      expect(out.stdoutText).not.toMatch(/outside-secret/);
      expect(out.exitCode).not.toBe(0);
      const violations = (out.details?.violations ?? []) as { operation: string }[];
      expect(Array.isArray(violations)).toBe(true);
    });

    it('cannot escape through a symlink planted in the workspace', async () => {
      const ws = await workspace();
      symlinkSync(outside, path.join(ws, 'link-out'));
      const out = await sh('echo x > link-out/via-link.txt; cat link-out/secret.txt');
      expect(existsSync(path.join(outside, 'via-link.txt'))).toBe(false);
      expect(out.stdoutText).not.toMatch(/outside-secret/);
    });

    it('cannot plant a git hook, rename .git away, or write .aleph', async () => {
      const ws = await workspace();
      mkdirSync(path.join(ws, '.git', 'hooks'), { recursive: true });
      writeFileSync(path.join(ws, '.git', 'config'), '[core]\n');
      await sh(
        'echo "#!/bin/sh" > .git/hooks/pre-commit; echo evil >> .git/config; mv .git .git-away; mkdir -p .aleph && echo x > .aleph/settings',
      );
      expect(existsSync(path.join(ws, '.git', 'hooks', 'pre-commit'))).toBe(false);
      expect(readFileSync(path.join(ws, '.git', 'config'), 'utf8')).toBe('[core]\n');
      expect(existsSync(path.join(ws, '.git-away'))).toBe(false);
      expect(existsSync(path.join(ws, '.aleph', 'settings'))).toBe(false);
    });

    it('cannot read the vault even when its parent is granted', async () => {
      const out = await sh(`cat '${vault}/token'`, { fsRead: [root] });
      expect(out.stdoutText).not.toMatch(/vault-secret/);
    });

    it("cannot read another session's workspace even when the workspace root is granted", async () => {
      const other = await workspace('other');
      writeFileSync(path.join(other, 'private.txt'), 'other-session\n');
      const out = await sh(`cat '${other}/private.txt'`, { fsRead: [path.join(root, 'workspaces')] });
      expect(out.stdoutText).not.toMatch(/other-session/);
    });

    it('cannot fork when spawnSubprocess is false', async () => {
      const out = await sandbox.execute({
        sessionId: 'escape',
        program: '/bin/sh',
        args: ['-c', '/bin/echo child-ran; echo parent'],
      });
      expect(out.stdoutText).not.toMatch(/child-ran/);
    });

    it('network none: cannot reach a host loopback port', async () => {
      const server = net.createServer((s) => s.end('reached\n'));
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      const port = (server.address() as net.AddressInfo).port;
      try {
        const out: SandboxOutput = await sh(`/usr/bin/nc -w 2 127.0.0.1 ${port} < /dev/null`);
        expect(out.stdoutText).not.toMatch(/reached/);
      } finally {
        server.close();
      }
    });

    it('allowHosts: only the proxy port is reachable, and the proxy refuses other hosts', async () => {
      const server = net.createServer((s) => s.end('reached\n'));
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      const port = (server.address() as net.AddressInfo).port;
      try {
        const out = await sh(
          `/usr/bin/nc -w 2 127.0.0.1 ${port} < /dev/null; /usr/bin/curl -s -o /dev/null -w '%{http_code}' https://example.com/`,
          { network: { kind: 'allowHosts', hosts: ['pypi.org'] } },
        );
        expect(out.stdoutText).not.toMatch(/reached/);
        expect(out.stdoutText).toMatch(/403|000/);
      } finally {
        server.close();
      }
    });

    it('cannot write the shared /tmp; TMPDIR is private and removed afterwards', async () => {
      const marker = `aleph-escape-${process.pid}`;
      const out = await sh(`echo x > /tmp/${marker}; echo y > "$TMPDIR/own" && echo "$TMPDIR"`);
      expect(existsSync(`/private/tmp/${marker}`)).toBe(false);
      const tmpdir = out.stdoutText.trim();
      expect(tmpdir).toMatch(/aleph-[0-9a-f]{12}\/?$/);
      expect(existsSync(tmpdir)).toBe(false);
    });
  },
);
