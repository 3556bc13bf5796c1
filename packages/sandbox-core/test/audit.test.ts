import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createJsonlAuditSink, isAlephError, NoopSandbox, WorkspaceSandbox } from '../src/index.js';
import { createFakeDriver } from '../src/testing.js';
import { recordLedger, tempDir } from './helpers.js';

describe('createJsonlAuditSink', () => {
  it('appends one JSON line per record and stops on close', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'nested', 'audit.jsonl');
    const sink = createJsonlAuditSink({ path: file });
    const sandbox = new WorkspaceSandbox({ driver: createFakeDriver(), workspaceRoot: path.join(dir, 'ws') });
    await sandbox.execute({ sessionId: 'a', program: 'ls' });
    await sandbox.execute({ sessionId: 'b', program: 'pwd' });
    await sink.close();
    await sandbox.execute({ sessionId: 'c', program: 'late' });
    const lines = readFileSync(file, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines.map((l) => [l.channel, l.program, l.sessionId])).toEqual([
      ['aleph:capability_ledger', 'ls', 'a'],
      ['aleph:capability_ledger', 'pwd', 'b'],
    ]);
  });
});

describe('file_operation records', () => {
  it('the JSONL sink writes them, next to the executions', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'audit.jsonl');
    const sink = createJsonlAuditSink({ path: file });
    const sandbox = new WorkspaceSandbox({ driver: createFakeDriver(), workspaceRoot: path.join(dir, 'ws') });
    await sandbox.session('f').files.writeFile('a.txt', 'abc');
    await sink.close();
    const [line] = readFileSync(file, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(line).toMatchObject({
      channel: 'aleph:capability_ledger',
      type: 'file_operation',
      operation: 'writeFile',
      path: 'a.txt',
      bytes: 3,
      outcome: 'ok',
    });
  });
});

describe('NoopSandbox', () => {
  it('fails fast with "sandbox disabled" and audits it', async () => {
    const records = recordLedger();
    let error: unknown;
    try {
      await new NoopSandbox().execute({ sessionId: 's', program: 'ls' });
    } catch (e) {
      error = e;
    }
    expect(isAlephError(error, 'ALEPH_SANDBOX_DISABLED')).toBe(true);
    expect((error as Error).message).toMatch(/^sandbox disabled: /);
    expect(records).toHaveLength(1);
    expect(records[0]?.outcome).toBe('denied');
  });

  it('records the session, the denial and arguments clipped as every other record', async () => {
    const records = recordLedger();
    const long = 'x'.repeat(5000);
    await expect(
      new NoopSandbox().execute({ sessionId: 's', program: 'echo', args: [long, 'b'] }),
    ).rejects.toThrow(/sandbox disabled/);
    expect(records[0]).toMatchObject({
      sessionId: 's',
      program: 'echo',
      decision: 'not-checked',
      driver: 'noop',
      denial: { code: 'ALEPH_SANDBOX_DISABLED' },
    });
    expect(records[0]?.args).toEqual([`${'x'.repeat(4096)}…(5000 chars)`, 'b']);
  });
});
