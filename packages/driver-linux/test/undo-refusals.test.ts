import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { InvalidInputError, type RunChanges } from '@aleph/sandbox-core';
import { afterAll, describe, expect, it } from 'vitest';
import { type KeptRun, writeRunJson } from '../src/changes/change-store.js';
import { listChanges, undoRun } from '../src/changes/undo.js';

/**
 * The refusals `undo()` makes before the native executor runs (nothing touched): an unknown or malformed
 * runId, a run already undone, a run that cannot be undone, and a run whose paths a later kept run also
 * changed (named). The executor itself is exercised by e2e/linux/changes.test.ts.
 */

const base = mkdtempSync(path.join(os.tmpdir(), 'aleph-undo-refusals-'));
afterAll(() => rmSync(base, { recursive: true, force: true }));
const NO_HELPER = path.join(base, 'no-helper');

const changes = (paths: string[], over: Partial<RunChanges> = {}): RunChanges => ({
  recorded: true,
  undoable: true,
  counts: { created: paths.length, modified: 0, deleted: 0, renamed: 0, quarantined: 0 },
  entries: paths.map((p) => ({ op: 'created', path: p, type: 'file' })),
  truncated: false,
  ...over,
});

function keep(
  stateDir: string,
  runId: string,
  paths: string[],
  over: Partial<KeptRun> = {},
  c?: RunChanges,
): void {
  const dir = path.join(stateDir, 'changes', runId);
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, 'states'), 'aleph-changes 1\n');
  writeRunJson(dir, {
    runId,
    sessionKey: 's',
    workspace: '/w',
    startedAt: '2026-01-01T00:00:00.000Z',
    endedAt: '2026-01-01T00:00:01.000Z',
    command: 'x',
    undone: false,
    changes: c ?? changes(paths),
    ...over,
  });
}

describe('undo refusals', () => {
  const stateDir = path.join(base, 'state');
  keep(stateDir, 'r0000000000aa-00000001', ['/w/a', '/w/b']);
  keep(stateDir, 'r0000000000ab-00000002', ['/w/b']);
  keep(stateDir, 'r0000000000ac-00000003', ['/w/c'], { undone: true });
  keep(
    stateDir,
    'r0000000000ad-00000004',
    ['/w/d'],
    {},
    changes(['/w/d'], { undoable: false, undoRefusal: 'budget' }),
  );

  it('an unknown or malformed runId is invalid input naming it', async () => {
    await expect(
      undoRun(stateDir, NO_HELPER, { runId: 'r0000000000zz-00000009', force: false }),
    ).rejects.toThrow(InvalidInputError);
    await expect(undoRun(stateDir, NO_HELPER, { runId: '../../etc', force: false })).rejects.toThrow(/runId/);
    expect(() => listChanges(stateDir, { runId: 'nope' })).toThrow(InvalidInputError);
  });

  it('refuses a run already undone, and one whose copies were not kept, saying why', async () => {
    const undone = await undoRun(stateDir, NO_HELPER, { runId: 'r0000000000ac-00000003', force: false });
    expect(undone).toMatchObject({
      undone: false,
      restored: [],
      removed: [],
      conflicts: [{ reason: 'already undone' }],
    });
    const unkept = await undoRun(stateDir, NO_HELPER, { runId: 'r0000000000ad-00000004', force: false });
    expect(unkept.conflicts[0]?.reason).toBe('budget');
  });

  it('refuses an older run whose paths a later kept run changed, naming that run', async () => {
    const r = await undoRun(stateDir, NO_HELPER, { runId: 'r0000000000aa-00000001', force: false });
    expect(r.undone).toBe(false);
    expect(r.conflicts).toEqual([
      { path: '/w/b', reason: 'changed by the later run r0000000000ab-00000002' },
    ]);
  });

  it('lists kept runs newest first, by workspace and limit', () => {
    expect(listChanges(stateDir, {}).map((r) => r.runId)).toEqual([
      'r0000000000ad-00000004',
      'r0000000000ac-00000003',
      'r0000000000ab-00000002',
      'r0000000000aa-00000001',
    ]);
    expect(listChanges(stateDir, { workspace: '/other' })).toEqual([]);
    expect(listChanges(stateDir, { limit: 1 })).toHaveLength(1);
  });
});
