import { describe, expect, it } from 'vitest';
import {
  ApprovalGate,
  boundDetails,
  detailsBudgetBytes,
  MAX_DETAIL_ITEMS,
  MAX_DROPPED_TARGETS,
  WorkspaceSandbox,
} from '../src/index.js';
import { createFakeDriver, FakeApprovalRequester } from '../src/testing.js';
import { recordLedger, tempDir } from './helpers.js';

/** `n` network denials over `names` distinct targets, with the long `allowWith` a real one has. */
function denials(n: number, names: number) {
  return Array.from({ length: n }, (_, i) => ({
    kind: i % 3 === 0 ? 'network.dns' : 'network.connect',
    target: `host-${i % names}.example:443`,
    reason: 'not in the allowlist',
    allowWith: `add "host-${i % names}.example" to the allowed hosts: ${'x'.repeat(900)}`,
  }));
}

const size = (v: unknown) => Buffer.byteLength(JSON.stringify(v));

describe('boundDetails', () => {
  it('leaves details that fit alone (the very object)', () => {
    const details = { tier: 'namespaces', denials: denials(3, 3), quarantined: ['a', 'b'] };
    expect(boundDetails(details, 65536)).toBe(details);
  });

  it('keeps the first denials, counts the rest per kind and target, and stays within the budget', () => {
    const all = denials(4000, 4000);
    const out = boundDetails({ tier: 'namespaces', denials: all }, 65536);
    expect(size(out)).toBeLessThanOrEqual(65536);
    const kept = out.denials as unknown[];
    expect(kept.length).toBeGreaterThan(0);
    expect(kept.length).toBeLessThanOrEqual(MAX_DETAIL_ITEMS);
    expect(kept).toEqual(all.slice(0, kept.length));
    const dropped = out.denialsDropped as {
      count: number;
      byKind: Record<string, number>;
      byTarget: Record<string, number>;
      otherTargets: number;
    };
    expect(dropped.count).toBe(4000 - kept.length);
    expect(out.omitted).toEqual({ denials: 4000 - kept.length });
    const rest = all.slice(kept.length);
    expect(dropped.byKind).toEqual({
      'network.dns': rest.filter((d) => d.kind === 'network.dns').length,
      'network.connect': rest.filter((d) => d.kind === 'network.connect').length,
    });
    expect(Object.keys(dropped.byTarget)).toHaveLength(MAX_DROPPED_TARGETS);
    const named = Object.values(dropped.byTarget).reduce((a, b) => a + b, 0);
    expect(named + dropped.otherTargets).toBe(dropped.count);
  });

  it('counts repeated targets: the most frequent first', () => {
    const out = boundDetails({ denials: denials(1000, 4) }, 65536);
    const dropped = out.denialsDropped as {
      count: number;
      byTarget: Record<string, number>;
      otherTargets: number;
    };
    expect(Object.keys(dropped.byTarget).sort()).toEqual(
      [0, 1, 2, 3].map((i) => `host-${i}.example:443`).sort(),
    );
    expect(Object.values(dropped.byTarget).reduce((a, b) => a + b, 0)).toBe(dropped.count);
    expect(dropped.otherTargets).toBe(0);
  });

  it('bounds every array, named by its path, those added later included, and long strings', () => {
    const details = {
      symlinksOut: Array.from({ length: 5000 }, (_, i) => `/ws/link-${i} -> /etc`),
      quarantined: Array.from({ length: 300 }, (_, i) => `/ws/.git/hooks/h${i}`),
      changes: { entries: Array.from({ length: 20000 }, (_, i) => ({ path: `f${i}`, kind: 'created' })) },
      note: 'n'.repeat(100_000),
    };
    const out = boundDetails(details, detailsBudgetBytes(65536));
    expect(size(out)).toBeLessThanOrEqual(65536);
    const omitted = out.omitted as Record<string, number>;
    const kept = (k: unknown) => (k as unknown[]).length;
    expect(omitted.symlinksOut).toBe(5000 - kept(out.symlinksOut));
    expect(omitted.quarantined).toBe(300 - kept(out.quarantined));
    expect(omitted['changes.entries']).toBe(20000 - kept((out.changes as { entries: unknown[] }).entries));
    expect(out.note).toMatch(/^n+…\[\d+ more characters\]$/);
    expect((out.note as string).length).toBeLessThan(5000);
  });

  it('names arrays inside array items with []', () => {
    const items = Array.from({ length: 3 }, () => ({ links: Array.from({ length: 500 }, (_, i) => i) }));
    const out = boundDetails({ files: items }, 1 << 20);
    expect(out.omitted).toEqual({ 'files[].links': 3 * (500 - MAX_DETAIL_ITEMS) });
  });

  it('a record saying whether its list is whole says truncated when the bound cut the list', () => {
    const entries = (n: number) => Array.from({ length: n }, (_, i) => ({ path: `f${i}`, kind: 'created' }));
    const out = boundDetails({ changes: { created: 642, truncated: false, entries: entries(642) } }, 1 << 20);
    const changes = out.changes as { truncated: boolean; entries: unknown[] };
    expect(changes.entries).toHaveLength(MAX_DETAIL_ITEMS);
    expect(changes.truncated).toBe(true);
    expect(out.omitted).toEqual({ 'changes.entries': 642 - MAX_DETAIL_ITEMS });
    // A list the bound did not cut keeps its own flag; a record without one gets none.
    const whole = boundDetails(
      { changes: { truncated: false, entries: entries(3) }, note: 'x'.repeat(9000) },
      1 << 20,
    );
    expect((whole.changes as { truncated: boolean }).truncated).toBe(false);
    const plain = boundDetails({ quarantine: { files: entries(500) } }, 1 << 20);
    expect(plain.quarantine).not.toHaveProperty('truncated');
  });

  it('budget: the output budget, at least 16 KiB, at most 256 KiB', () => {
    expect(detailsBudgetBytes(65536)).toBe(65536);
    expect(detailsBudgetBytes(10)).toBe(16 * 1024);
    expect(detailsBudgetBytes(1 << 30)).toBe(256 * 1024);
  });
});

describe('the pipeline bounds every output and its audit record', () => {
  it('a flood of denials from the driver stays within the output budget in the output and the audit', async () => {
    const records = recordLedger();
    const driver = createFakeDriver({
      output: { exitCode: 0, details: { tier: 'fake', denials: denials(4000, 4000) } },
    });
    const sandbox = new WorkspaceSandbox({
      driver,
      workspaceRoot: tempDir(),
      maxOutputBytes: 65536,
      approvalGate: new ApprovalGate({ requester: new FakeApprovalRequester({ outcome: 'denied' }) }),
    });
    const out = await sandbox.execute({ sessionId: 's', program: 'true', args: [] });
    expect(size(out.details)).toBeLessThanOrEqual(65536);
    expect(size(out.toJSON())).toBeLessThan(65536 + 4096);
    const details = out.details ?? {};
    expect((details.denialsDropped as { count: number }).count).toBe(
      4000 - (details.denials as unknown[]).length,
    );
    const record = records.find((r) => r.type === 'capability_ledger');
    expect(size(record)).toBeLessThan(65536 + 8192);
    expect(record?.details).toEqual(out.details);
    await sandbox.dispose();
  });
});
