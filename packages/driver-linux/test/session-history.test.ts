import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { SessionHistory } from '../src/changes/session-history.js';

/**
 * `changes.keepOnDispose` (config `sandbox.changes.keep_on_dispose`): false drops the change sets this
 * driver recorded when their session is closed (that session's only) and when the driver is disposed (the
 * rest); true keeps them all. A run of another driver in the same store is never dropped.
 */

const base = mkdtempSync(path.join(os.tmpdir(), 'aleph-session-history-'));
afterAll(() => rmSync(base, { recursive: true, force: true }));
let n = 0;
const runId = () => `r${String(++n).padStart(12, '0')}-0000000${n % 10}`;

function store(): { stateDir: string; make: (id: string) => string } {
  const stateDir = mkdtempSync(path.join(base, 'state-'));
  return {
    stateDir,
    make: (id) => {
      const dir = path.join(stateDir, 'changes', id);
      mkdirSync(path.join(dir, 'blobs'), { recursive: true });
      return dir;
    },
  };
}

describe('SessionHistory', () => {
  it('keepOnDispose false: closing a session drops its runs only; dispose drops the rest', () => {
    const { stateDir, make } = store();
    const h = new SessionHistory(stateDir, false);
    const [a1, a2, b1, other] = [runId(), runId(), runId(), runId()];
    for (const id of [a1, a2, b1, other]) make(id);
    h.note('a', a1);
    h.note('a', a2);
    h.note({ agent: 'b' }, b1);
    h.close('a');
    expect([a1, a2, b1, other].map((id) => existsSync(path.join(stateDir, 'changes', id)))).toEqual([
      false,
      false,
      true,
      true,
    ]);
    h.dispose();
    expect(existsSync(path.join(stateDir, 'changes', b1))).toBe(false);
    // Another driver's run in the same store stays.
    expect(existsSync(path.join(stateDir, 'changes', other))).toBe(true);
  });

  it('keepOnDispose true keeps every run; a value that is not a run id names nothing to drop', () => {
    const { stateDir, make } = store();
    const kept = new SessionHistory(stateDir, true);
    const id = runId();
    make(id);
    kept.note('a', id);
    kept.close('a');
    kept.dispose();
    expect(existsSync(path.join(stateDir, 'changes', id))).toBe(true);
    const dropping = new SessionHistory(stateDir, false);
    dropping.note('a', '..');
    dropping.note('a', undefined);
    dropping.dispose();
    expect(existsSync(path.join(stateDir, 'changes'))).toBe(true);
    expect(existsSync(path.join(stateDir, 'changes', id))).toBe(true);
  });
});
