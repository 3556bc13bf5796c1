import { mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createLinuxDriver } from '@aleph/driver-linux';
import { ApprovalGate, WorkspaceSandbox } from '@aleph/sandbox-core';
import { describe, expect, it } from 'vitest';
import { linuxStack, REQUIRED } from '../support.js';

const stack = linuxStack();

function processesMentioning(text: string): number {
  let n = 0;
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid) || Number(pid) === process.pid) continue;
    try {
      if (readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(text)) n++;
    } catch {
      // exited
    }
  }
  return n;
}

const openFds = () => readdirSync('/proc/self/fd').length;
const sockets = () =>
  readdirSync('/proc/self/fd').filter((fd) => {
    try {
      return readlinkSync(`/proc/self/fd/${fd}`).startsWith('socket:');
    } catch {
      return false;
    }
  }).length;

describe.skipIf(!stack.ok && !stack.missing.some((m) => REQUIRED.has(m)))(
  `200 concurrent executions${stack.ok ? '' : ` [skipped: ${stack.reason}]`}`,
  () => {
    it('all complete and leave no process, descriptor, socket, proxy or temp directory behind', async () => {
      const root = mkdtempSync(path.join(os.tmpdir(), 'aleph-conc-'));
      const tmpBefore = readdirSync(os.tmpdir()).filter((n) => n.startsWith('aleph-proxy-')).length;
      const fdsBefore = openFds();
      const socketsBefore = sockets();
      const driver = createLinuxDriver({ proxy: { resolver: async () => ['127.0.0.1'] } });
      const sandbox = new WorkspaceSandbox({
        driver,
        workspaceRoot: root,
        approvalGate: new ApprovalGate({
          requester: { requestApproval: async () => ({ outcome: 'approved' }) },
        }),
      });
      const results = await Promise.all(
        Array.from({ length: 200 }, (_, i) =>
          sandbox.execute({
            sessionId: `s${i % 20}`,
            program: 'sleep',
            args: ['0.3'],
            // A quarter use the proxy path too (allowHosts), to cover the bridge and proxy pool.
            ...(i % 4 === 0
              ? { capabilities: { network: { kind: 'allowHosts' as const, hosts: ['example.test'] } } }
              : {}),
          }),
        ),
      );
      expect(results.map((r) => r.exitCode)).toEqual(results.map(() => 0));
      await sandbox.dispose();
      // Sandboxed processes are in their own pid namespaces; what could leak on the host is bwrap.
      expect(processesMentioning(root)).toBe(0);
      expect(openFds()).toBeLessThanOrEqual(fdsBefore);
      expect(sockets()).toBeLessThanOrEqual(socketsBefore);
      expect(readdirSync(os.tmpdir()).filter((n) => n.startsWith('aleph-proxy-')).length).toBe(tmpBefore);
      rmSync(root, { recursive: true, force: true });
    }, 120_000);
  },
);
