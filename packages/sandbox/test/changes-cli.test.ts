import { AlephError, type KeptRun, type RunChanges, type UndoResult } from '@aleph/sandbox-core';
import { createFakeDriver } from '@aleph/sandbox-core/testing';
import { describe, expect, it, vi } from 'vitest';
import { changesLine, keptRunLine, keptRunText, undoText } from '../src/cli/changes-text.js';
import { undoFailure } from '../src/cli/undo.js';
import { buildSandbox, parseConfig } from '../src/index.js';

const changes = (over: Partial<RunChanges> = {}): RunChanges => ({
  recorded: true,
  undoable: true,
  counts: { created: 3, modified: 1, deleted: 2, renamed: 0, quarantined: 0 },
  entries: [
    { op: 'deleted', path: '/w/a', type: 'file' },
    { op: 'modified', path: '/w/b', type: 'file', what: ['content', 'mode'] },
    { op: 'renamed', path: '/w/d2', from: '/w/d', type: 'directory' },
    { op: 'created', path: '/w/.git/hooks/x', type: 'file', quarantined: true },
  ],
  truncated: false,
  ...over,
});

const ID = 'r0000mip8nx2k-9c0e77a1';

describe('[sandbox.changes]', () => {
  it('defaults to on, 2048 MiB per session, 512 MiB per file, kept on dispose', () => {
    expect(parseConfig({}).changes).toEqual({
      enabled: true,
      maxBytes: 2048 * 1024 * 1024,
      maxFileBytes: 512 * 1024 * 1024,
      keepOnDispose: true,
    });
    expect(
      parseConfig({
        sandbox: { changes: { enabled: false, max_mb: 10, max_file_mb: 1, keep_on_dispose: false } },
      }).changes,
    ).toEqual({
      enabled: false,
      maxBytes: 10 * 1024 * 1024,
      maxFileBytes: 1024 * 1024,
      keepOnDispose: false,
    });
  });

  it('a bad value names the key, the value and the fix', () => {
    const bad = (changes: Record<string, unknown>, key: string, words: string) => {
      expect(() => parseConfig({ sandbox: { changes } })).toThrow(
        expect.objectContaining({ code: 'ALEPH_CONFIG_INVALID', message: expect.stringContaining(key) }),
      );
      expect(() => parseConfig({ sandbox: { changes } })).toThrow(words);
    };
    bad({ max_mb: 0 }, 'sandbox.changes.max_mb', 'must be a positive number of MiB (got 0); e.g. 2048');
    bad({ max_file_mb: 1.5 }, 'sandbox.changes.max_file_mb', 'whole number');
    bad({ enabled: 'yes' }, 'sandbox.changes.enabled', 'must be true or false');
    bad({ max_gb: 1 }, 'sandbox.changes.max_gb', 'keep_on_dispose');
  });
});

describe('the CLI text of changes and undo', () => {
  it('run prints one line for a run that changed something, with the undo command', () => {
    expect(changesLine({ runId: ID, changes: changes() })).toBe(
      `aleph-sandbox: changes: 3 created, 1 modified, 2 deleted (run ${ID}; undo: aleph-sandbox undo ${ID})\n`,
    );
    expect(
      changesLine({
        runId: ID,
        changes: changes({
          undoable: false,
          undoRefusal: 'over the budget',
          counts: { ...changes().counts, quarantined: 1 },
        }),
      }),
    ).toBe(
      `aleph-sandbox: changes: 3 created, 1 modified, 2 deleted, 1 set aside (run ${ID}; not undoable: over the budget)\n`,
    );
    const none = { created: 0, modified: 0, deleted: 0, renamed: 0, quarantined: 0 };
    expect(changesLine({ runId: ID, changes: changes({ counts: none }) })).toBeUndefined();
    expect(changesLine({ runId: ID, changes: changes({ recorded: false }) })).toBeUndefined();
    expect(changesLine({ runId: ID })).toBeUndefined();
  });

  const kept: KeptRun = {
    runId: ID,
    sessionKey: 'k',
    workspace: '/w',
    startedAt: '2026-01-01T00:00:00.000Z',
    endedAt: '2026-01-01T00:00:01.000Z',
    command: 'rm -r src',
    undone: false,
    changes: changes({ truncated: true }),
  };

  it('lists a kept run on one line, and its changes one path a line', () => {
    expect(keptRunLine(kept)).toBe(
      `${ID}  2026-01-01T00:00:01.000Z  3 created, 1 modified, 2 deleted  [undoable]  rm -r src`,
    );
    expect(keptRunLine({ ...kept, undone: true })).toContain('[undone]');
    const text = keptRunText(kept);
    expect(text).toContain('  modified file      /w/b (content, mode)');
    expect(text).toContain('  renamed  directory /w/d2 (from /w/d)');
    expect(text).toContain('/w/.git/hooks/x [set aside]');
    expect(text).toContain('2 more not listed here');
  });

  it('an undo names every conflict when refused, and what it restored when done', () => {
    const refused: UndoResult = {
      runId: ID,
      undone: false,
      restored: [],
      removed: [],
      conflicts: [
        { path: '/w/b', reason: 'changed after the run' },
        { path: '/w/c', reason: `changed by the later run ${ID}` },
      ],
    };
    const text = undoText(refused, false, false);
    expect(text).toContain(`not undone ${ID}: 2 path(s)`);
    expect(text).toContain('  /w/b: changed after the run\n');
    expect(text).toContain(`  /w/c: changed by the later run ${ID}\n`);
    const done = {
      ...refused,
      undone: true,
      restored: ['/w/a'],
      removed: Array.from({ length: 25 }, (_, i) => `/w/n${i}`),
    };
    const doneText = undoText(done, false, true);
    expect(doneText).toContain(`undone ${ID}: restored 1, removed 25`);
    expect(doneText).toContain('conflicts (overridden by --force):');
    expect(doneText).toContain('  restored /w/a');
    expect(doneText).toContain('… and 5 more (--json lists every path)');
    expect(undoText({ ...refused, conflicts: [] }, true, false)).toContain(`would undo ${ID}`);
    expect(undoText(refused, true, false)).toContain(`would refuse to undo ${ID}`);
  });
});

describe('AlephSandbox.undo and changes', () => {
  it('reach the driver through the pipeline; a disabled sandbox refuses', async () => {
    const sandbox = await buildSandbox(parseConfig({}), { driver: createFakeDriver() });
    await expect(sandbox.undo(ID)).rejects.toMatchObject({ code: 'ALEPH_UNDO_UNAVAILABLE' });
    await sandbox.dispose();
    const off = await buildSandbox(parseConfig({ sandbox: { enabled: false } }));
    await expect(off.undo(ID)).rejects.toMatchObject({ code: 'ALEPH_SANDBOX_DISABLED' });
    await expect(off.changes()).rejects.toMatchObject({ code: 'ALEPH_SANDBOX_DISABLED' });
  });
});

describe('undoFailure', () => {
  it('maps an unknown run to 2, undo unavailable to 1, a failure to 125, with one line (and --json the error)', () => {
    const written: string[] = [];
    const spy = vi.spyOn(process.stderr, 'write').mockImplementation((chunk) => {
      written.push(String(chunk));
      return true;
    });
    const out = vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => {
      written.push(String(chunk));
      return true;
    });
    try {
      expect(undoFailure(new AlephError('ALEPH_RUN_UNKNOWN', 'runId names no kept run\nmore'), false)).toBe(
        2,
      );
      expect(undoFailure(new AlephError('ALEPH_UNDO_UNAVAILABLE', 'undo is unavailable: x'), true)).toBe(1);
      expect(undoFailure(new AlephError('ALEPH_DRIVER_FAILED', 'boom'), false)).toBe(125);
      expect(() => undoFailure(new Error('not ours'), false)).toThrow('not ours');
    } finally {
      spy.mockRestore();
      out.mockRestore();
    }
    expect(written).toEqual([
      'aleph-sandbox: runId names no kept run\n',
      `${JSON.stringify({ error: { code: 'ALEPH_UNDO_UNAVAILABLE', message: 'undo is unavailable: x' } })}\n`,
      'aleph-sandbox: undo is unavailable: x\n',
      'aleph-sandbox: boom\n',
    ]);
  });
});
