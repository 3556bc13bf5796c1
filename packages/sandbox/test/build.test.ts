import diagnosticsChannel from 'node:diagnostics_channel';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  CAPABILITY_LEDGER_CHANNEL,
  type CapabilityLedgerRecord,
  isAlephError,
  strictCapabilities,
} from '@aleph/sandbox-core';
import { createFakeDriver } from '@aleph/sandbox-core/testing';
import { describe, expect, it, onTestFinished } from 'vitest';
import { buildSandbox, createCallbackApprovalRequester, parseConfig } from '../src/index.js';

/** A temp directory removed when the test finishes. */
const root = () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'aleph-build-'));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
};
const config = (over: Record<string, unknown> = {}) =>
  parseConfig({ sandbox: { workspace_root: path.join(root(), 'ws'), ...over } });

async function rejection(p: Promise<unknown>): Promise<Error & { code?: string }> {
  try {
    await p;
  } catch (e) {
    return e as Error;
  }
  throw new Error('expected a rejection');
}

describe('buildSandbox', () => {
  it('runs commands through the pipeline with the driver it is given', async () => {
    const driver = createFakeDriver({ output: { stdout: new TextEncoder().encode('hi') } });
    const sandbox = await buildSandbox(config(), { driver });
    const out = await sandbox.execute({ sessionId: 's', program: 'echo', args: ['hi'] });
    expect(out.stdoutText).toBe('hi');
    expect(driver.runCount).toBe(1);
    await sandbox.dispose();
  });

  it('has the session API: spawn, session handles and files, through the same pipeline', async () => {
    const driver = createFakeDriver({ output: { stdout: new TextEncoder().encode('streamed') } });
    const sandbox = await buildSandbox(config(), { driver });
    const session = sandbox.session('chat');
    const proc = await session.spawn({ program: 'echo' });
    expect((await proc.wait()).stdoutText).toBe('streamed');
    await session.files.writeFile('notes.md', 'hi');
    expect(await sandbox.files('chat').readTextFile('notes.md')).toBe('hi');
    const denied = await rejection(sandbox.spawn({ sessionId: 'chat', program: 'rm', args: ['-rf', '/'] }));
    expect(denied.code).toBe('ALEPH_POLICY_DENIED');
    await sandbox.dispose();
    expect((await rejection(session.files.readFile('notes.md'))).code).toBe('ALEPH_DISPOSED');
  });

  it('disabled: spawn and every session call fail fast with ALEPH_SANDBOX_DISABLED', async () => {
    const sandbox = await buildSandbox(config({ enabled: false }));
    expect((await rejection(sandbox.spawn({ sessionId: 's', program: 'ls' }))).code).toBe(
      'ALEPH_SANDBOX_DISABLED',
    );
    expect((await rejection(sandbox.session('s').files.readFile('a'))).code).toBe('ALEPH_SANDBOX_DISABLED');
    expect((await rejection(sandbox.files('s').list('.'))).code).toBe('ALEPH_SANDBOX_DISABLED');
  });

  it('installs the command policy first: rm -rf / is denied before anything runs', async () => {
    const driver = createFakeDriver();
    const sandbox = await buildSandbox(config({ rate_limit: { capacity: 1, refill_per_second: 0 } }), {
      driver,
    });
    const e = await rejection(sandbox.execute({ sessionId: 's', program: 'rm', args: ['-rf', '/'] }));
    expect(e.code).toBe('ALEPH_POLICY_DENIED');
    // The denied command did not take the only rate-limit token: the policy ran first.
    await sandbox.execute({ sessionId: 's', program: 'ls' });
    expect((await rejection(sandbox.execute({ sessionId: 's', program: 'ls' }))).code).toBe(
      'ALEPH_RATE_LIMITED',
    );
    expect(driver.runCount).toBe(1);
    await sandbox.dispose();
  });

  it('uses the configured baseline and the approval requester', async () => {
    let asked = 0;
    const sandbox = await buildSandbox(config({ baseline: { spawn_subprocess: true } }), {
      driver: createFakeDriver(),
      approvalRequester: createCallbackApprovalRequester(() => {
        asked++;
        return 'session';
      }),
    });
    await sandbox.execute({ sessionId: 's', program: 'sh', capabilities: { spawnSubprocess: true } });
    expect(asked).toBe(0);
    await sandbox.execute({ sessionId: 's', program: 'cat', capabilities: { fsRead: ['/etc'] } });
    await sandbox.execute({ sessionId: 's', program: 'cat', capabilities: { fsRead: ['/etc/hosts'] } });
    expect(asked).toBe(1);
    await sandbox.dispose();
  });

  it('denies elevations by default (no requester)', async () => {
    const sandbox = await buildSandbox(config(), { driver: createFakeDriver() });
    const e = await rejection(
      sandbox.execute({ sessionId: 's', program: 'curl', capabilities: { network: { kind: 'allowAll' } } }),
    );
    expect(e.code).toBe('ALEPH_CAPABILITY_DENIED');
    await sandbox.dispose();
  });

  it('enabled = false fails fast and never runs anything', async () => {
    const driver = createFakeDriver();
    const sandbox = await buildSandbox(config({ enabled: false }), { driver });
    const e = await rejection(sandbox.execute({ sessionId: 's', program: 'ls' }));
    expect(isAlephError(e, 'ALEPH_SANDBOX_DISABLED')).toBe(true);
    expect(e.message).toMatch(/^sandbox disabled: /);
    expect(driver.runCount).toBe(0);
  });

  it('writes the audit JSONL and releases everything on dispose; a disposed sandbox is a clear error', async () => {
    const auditFile = path.join(root(), 'audit', 'a.jsonl');
    const driver = createFakeDriver();
    const sandbox = await buildSandbox(config({ audit: { jsonl_path: auditFile } }), { driver });
    await sandbox.execute({ sessionId: 's', program: 'ls' });
    await rejection(sandbox.execute({ sessionId: 's', program: 'rm', args: ['-rf', '/'] }));
    await sandbox.dispose();
    expect(driver.disposed).toBe(true);
    const lines = readFileSync(auditFile, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines.filter((l) => l.channel === 'aleph:capability_ledger').map((l) => l.outcome)).toEqual([
      'completed',
      'denied',
    ]);
    expect(lines.some((l) => l.channel === 'aleph:command_policy' && l.rules.includes('rm-rf-root'))).toBe(
      true,
    );
    expect((await rejection(sandbox.execute({ sessionId: 's', program: 'ls' }))).code).toBe('ALEPH_DISPOSED');
  });

  it('reports a custom rule that does not compile and keeps the defaults', async () => {
    const sandbox = await buildSandbox(
      config({ command_policy: { custom_rules: [{ name: 'bad', regex: '(?=x)' }] } }),
      {
        driver: createFakeDriver(),
      },
    );
    expect(sandbox.warnings[0]).toMatch(/rule bad skipped: .*lookaround/);
    expect(
      (await rejection(sandbox.execute({ sessionId: 's', program: 'rm', args: ['-rf', '/'] }))).code,
    ).toBe('ALEPH_POLICY_DENIED');
    await sandbox.dispose();
  });

  it('refuses a platform without a driver, clearly', async () => {
    const e = await rejection(buildSandbox(config(), { platform: 'freebsd' }));
    expect(e.code).toBe('ALEPH_DRIVER_UNAVAILABLE');
    expect(e.message).toMatch(/no sandbox driver is available for freebsd/);
  });

  it('picks the Windows driver on win32, configured from [sandbox.windows]', async () => {
    const sandbox = await buildSandbox(config({ windows: { require_appcontainer: true } }), {
      platform: 'win32',
    });
    try {
      expect(sandbox.driver?.name).toBe('windows');
      const ws = sandbox.workspacePath('s');
      const profile = (await sandbox.driver?.profileFor(strictCapabilities(), ws, {
        sessionId: 's',
        workspace: ws,
      })) as unknown as { tiers: string[] };
      expect(profile.tiers).toEqual(['appcontainer']);
    } finally {
      await sandbox.dispose();
    }
  });

  it.runIf(process.platform !== 'win32')(
    `picks the macOS driver on darwin, configured from [sandbox.macos]${process.platform === 'win32' ? ' [skipped: macOS paths cannot be formed from Windows ones]' : ''}`,
    async () => {
      const sandbox = await buildSandbox(config({ macos: { protect_all_git: true } }), {
        platform: 'darwin',
      });
      try {
        expect(sandbox.driver?.name).toBe('macos');
        const ws = sandbox.workspacePath('s');
        const profile = (await sandbox.driver?.profileFor(strictCapabilities(), ws, {
          sessionId: 's',
          workspace: ws,
        })) as unknown as { protected: { paths: string[] } };
        expect(profile.protected.paths.some((p) => p.endsWith('/.git'))).toBe(true);
      } finally {
        await sandbox.dispose();
      }
    },
  );

  it('emits one ledger record per execution', async () => {
    const records: CapabilityLedgerRecord[] = [];
    const handler = (m: unknown) => records.push(m as CapabilityLedgerRecord);
    diagnosticsChannel.subscribe(CAPABILITY_LEDGER_CHANNEL, handler);
    try {
      const sandbox = await buildSandbox(config(), { driver: createFakeDriver() });
      await Promise.all([1, 2, 3].map(() => sandbox.execute({ sessionId: 'x', program: 'ls' })));
      await sandbox.dispose();
      expect(records.filter((r) => r.sessionId === 'x')).toHaveLength(3);
    } finally {
      diagnosticsChannel.unsubscribe(CAPABILITY_LEDGER_CHANNEL, handler);
    }
  });
});
