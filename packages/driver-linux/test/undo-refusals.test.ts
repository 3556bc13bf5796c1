import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { InvalidInputError, type RunChanges, sessionKeyToFilename } from '@aleph/sandbox-core';
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

describe('the session’s budget', () => {
  it('drops the oldest runs’ copies first, and those runs then say why they cannot be undone', async () => {
    const { finishRecording, readRunJson } = await import('../src/changes/change-store.js');
    const stateDir = path.join(base, 'budget');
    const root = path.join(stateDir, 'changes');
    const old = 'r0000000000ba-00000001';
    keep(stateDir, old, ['/w/old']);
    mkdirSync(path.join(root, old, 'blobs'));
    writeFileSync(path.join(root, old, 'blobs', '1'), 'x');
    writeFileSync(
      path.join(root, old, 'meta.json'),
      JSON.stringify({ sessionKey: sessionKeyToFilename('s'), bytes: 8192 }),
    );
    const runId = 'r0000000000bb-00000002';
    const dir = path.join(root, runId);
    mkdirSync(path.join(dir, 'blobs'), { recursive: true });
    writeFileSync(
      path.join(dir, 'states'),
      'aleph-changes 1\nroot 0 :/w\nrecorded 1 :\nundoable 1 :\nbytes 8192\nentry 0 1 1 :new - 0 0 0 0 0 0 0 0 0 0 0 : f 644 0 0 1 8 1 5 1 0 1 0 :\n',
    );
    const request = { sessionId: 's', workspace: '/w', program: 'x', args: [] } as never;
    const options = { enabled: true, maxBytes: 12_000, maxFileBytes: 1 << 20, keepOnDispose: true };
    const c = finishRecording(
      { runId, dir, startedAt: '', launchArgs: [], helperArgs: [], trapsSpawn: false },
      request,
      [],
      options,
    );
    expect(c.counts.created).toBe(1);
    expect(readRunJson(dir)?.changes.undoable).toBe(true);
    const dropped = readRunJson(path.join(root, old));
    expect(dropped?.changes).toMatchObject({ undoable: false, undoRefusal: expect.stringMatching(/budget/) });
    const r = await undoRun(stateDir, NO_HELPER, { runId: old, force: true });
    expect(r.undone).toBe(false);
  });
});
