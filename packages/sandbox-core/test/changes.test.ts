import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  type CapabilityLedgerRecord,
  changesOf,
  changesSummary,
  type DriverRunRequest,
  isRunId,
  NoopSandbox,
  newRunId,
  type RunChanges,
  type SandboxSession,
  sessionKeyToFilename,
  type UndoRecord,
  WorkspaceSandbox,
} from '../src/index.js';
import { createFakeDriver, type FakeDriverOptions } from '../src/testing.js';
import { auditRecords as records, rejection, tempDir } from './helpers.js';

/** A session whose optional undo/changes are there (WorkspaceSandbox's are). */
function handle(s: SandboxSession): Required<SandboxSession> {
  if (s.undo === undefined || s.changes === undefined) throw new Error('no undo on this session');
  return s as Required<SandboxSession>;
}

/** A sandbox on the fake driver whose runs do `act(workspace)` on the host (recorded when `changes`). */
function setup(
  act: (ws: string, request: DriverRunRequest) => void,
  options: Partial<FakeDriverOptions> = {},
) {
  const root = tempDir();
  const driver = createFakeDriver({
    changes: true,
    output: (request) => {
      act(request.workspace, request);
      return { exitCode: 0 };
    },
    ...options,
  });
  const sandbox = new WorkspaceSandbox({ driver, workspaceRoot: root });
  return { sandbox, driver };
}

describe('newRunId', () => {
  it('is unique, of the documented shape, and sorts by time as text', () => {
    const ids = Array.from({ length: 200 }, () => newRunId());
    expect(new Set(ids).size).toBe(200);
    for (const id of ids) expect(isRunId(id)).toBe(true);
    const older = newRunId(1_700_000_000_000);
    const newer = newRunId(1_700_000_000_001);
    expect(older < newer).toBe(true);
    expect(newRunId(36 ** 9) > newRunId(36 ** 9 - 1)).toBe(true);
    expect(older).toMatch(/^r[0-9a-z]{12}-[0-9a-f]{8}$/);
    expect(isRunId('r000000000000-0000000g')).toBe(false);
    expect(isRunId('../r000000000000-00000000')).toBe(false);
  });
});

describe('details.runId and the audit record', () => {
  it('every execute and spawn output carries the pipeline run id, the same as its audit record', async () => {
    const log = records();
    const root = tempDir();
    const driver = createFakeDriver({ output: { details: { runId: 'driver-made-this-up', tier: 'x' } } });
    const sandbox = new WorkspaceSandbox({ driver, workspaceRoot: root });
    const a = await sandbox.execute({ sessionId: 's', program: 'true' });
    const b = await (await sandbox.spawn({ sessionId: 's', program: 'true' })).wait();
    const c = await sandbox.session('t').execute({ program: 'true' });
    const ids = [a, b, c].map((o) => o.details?.runId as string);
    for (const id of ids) expect(isRunId(id)).toBe(true);
    expect(new Set(ids).size).toBe(3);
    expect(a.details?.tier).toBe('x');
    expect(driver.requests.map((r) => r.runId)).toEqual(ids);
    const ledger = log.filter((r): r is CapabilityLedgerRecord => r.type === 'capability_ledger');
    expect(ledger.map((r) => r.runId)).toEqual(ids);
    expect(ledger.map((r) => r.details?.runId)).toEqual(ids);
    expect(a.toJSON().details?.runId).toBe(ids[0]);
  });

  it('a refused run has a run id in its audit record too', async () => {
    const log = records();
    const { sandbox } = setup(() => {});
    await rejection(sandbox.execute({ sessionId: 's', program: 'true', cwd: '/' }));
    const record = log.at(-1) as CapabilityLedgerRecord;
    expect(record.outcome).toBe('denied');
    expect(isRunId(record.runId)).toBe(true);
  });
});

describe('details.changes from the fake driver', () => {
  it('lists what a run created, modified and deleted, and sums it up in one line', async () => {
    let step = 0;
    const { sandbox } = setup((ws) => {
      if (step++ === 0) {
        writeFileSync(path.join(ws, 'keep.txt'), 'v1');
        writeFileSync(path.join(ws, 'gone.txt'), 'bye');
        return;
      }
      writeFileSync(path.join(ws, 'keep.txt'), 'v2');
      rmSync(path.join(ws, 'gone.txt'));
      writeFileSync(path.join(ws, 'new.txt'), 'hi');
    });
    await sandbox.execute({ sessionId: 's', program: 'setup' });
    const out = await sandbox.execute({ sessionId: 's', program: 'edit' });
    const changes = changesOf(out.details) as RunChanges;
    expect(changes.counts).toEqual({ created: 1, modified: 1, deleted: 1, renamed: 0, quarantined: 0 });
    expect(changes.entries.map((e) => `${e.op} ${path.basename(e.path)}`)).toEqual([
      'deleted gone.txt',
      'modified keep.txt',
      'created new.txt',
    ]);
    expect(changes.entries.find((e) => e.op === 'modified')?.what).toEqual(['content']);
    expect(changesSummary(changes)).toBe('1 created, 1 modified, 1 deleted');
  });

  it('summaries name what is not undoable, set aside or not recorded', () => {
    const base: RunChanges = {
      recorded: true,
      undoable: true,
      counts: { created: 0, modified: 0, deleted: 0, renamed: 0, quarantined: 0 },
      entries: [],
      truncated: false,
    };
    expect(changesSummary(base)).toBe('no changes');
    expect(
      changesSummary({
        ...base,
        undoable: false,
        undoRefusal: 'budget',
        counts: { ...base.counts, created: 2, quarantined: 1 },
      }),
    ).toBe('2 created (1 set aside); not undoable: budget');
    expect(changesSummary({ ...base, recorded: false, reason: 'no journal' })).toBe(
      'changes not recorded: no journal',
    );
    expect(changesOf({ changes: { recorded: 'yes' } })).toBeUndefined();
    expect(changesOf(undefined)).toBeUndefined();
  });
});

describe('Sandbox.undo', () => {
  function editor() {
    let step = 0;
    return setup((ws) => {
      if (step++ === 0) {
        mkdirSync(path.join(ws, 'src'));
        writeFileSync(path.join(ws, 'src', 'a.ts'), 'A');
        writeFileSync(path.join(ws, 'tool.sh'), '#!/bin/sh\n');
        chmodSync(path.join(ws, 'tool.sh'), 0o755);
        return;
      }
      rmSync(path.join(ws, 'src'), { recursive: true });
      chmodSync(path.join(ws, 'tool.sh'), 0o644);
      writeFileSync(path.join(ws, 'junk'), 'x');
    });
  }

  it('restores what the run deleted and modified, removes what it created, and audits it', async () => {
    const log = records();
    const { sandbox } = editor();
    await sandbox.execute({ sessionId: 's', program: 'setup' });
    const out = await sandbox.execute({ sessionId: 's', program: 'rm' });
    const ws = await sandbox.session('s').workspace();
    expect(existsSync(path.join(ws, 'src'))).toBe(false);
    const runId = out.details?.runId as string;
    const result = await sandbox.undo(runId);
    expect(result.undone).toBe(true);
    expect(result.conflicts).toEqual([]);
    expect(result.removed).toEqual([path.join(ws, 'junk')]);
    expect(readFileSync(path.join(ws, 'src', 'a.ts'), 'utf8')).toBe('A');
    expect(statSync(path.join(ws, 'tool.sh')).mode & 0o777).toBe(0o755);
    expect(existsSync(path.join(ws, 'junk'))).toBe(false);
    const undo = log.filter((r): r is UndoRecord => r.type === 'undo');
    expect(undo).toHaveLength(1);
    expect(undo[0]).toMatchObject({ runId, result: 'undone', forced: false, dryRun: false, error: null });
    expect(undo[0]?.restored).toBe(result.restored.length);
    // Listed as undone; a second undo is a refusal, not a second restore.
    const [kept] = await sandbox.changes({ runId });
    expect(kept?.undone).toBe(true);
    const again = await sandbox.undo(runId);
    expect(again.undone).toBe(false);
    expect(again.conflicts[0]?.reason).toBe('already undone');
  });

  it('refuses, touching nothing, when a path changed after the run; force takes it back anyway', async () => {
    const log = records();
    const { sandbox } = editor();
    await sandbox.execute({ sessionId: 's', program: 'setup' });
    const out = await sandbox.execute({ sessionId: 's', program: 'rm' });
    const ws = await sandbox.session('s').workspace();
    writeFileSync(path.join(ws, 'junk'), 'the user edited it');
    const runId = out.details?.runId as string;
    const dry = await sandbox.undo(runId, { dryRun: true, force: true });
    expect(dry.undone).toBe(false);
    expect(existsSync(path.join(ws, 'src'))).toBe(false);
    const refused = await sandbox.undo(runId);
    expect(refused.undone).toBe(false);
    expect(refused.conflicts).toEqual([{ path: path.join(ws, 'junk'), reason: 'changed after the run' }]);
    expect(existsSync(path.join(ws, 'src'))).toBe(false);
    expect(readFileSync(path.join(ws, 'junk'), 'utf8')).toBe('the user edited it');
    const forced = await sandbox.undo(runId, { force: true });
    expect(forced.undone).toBe(true);
    expect(existsSync(path.join(ws, 'junk'))).toBe(false);
    expect(readFileSync(path.join(ws, 'src', 'a.ts'), 'utf8')).toBe('A');
    const undo = log.filter((r): r is UndoRecord => r.type === 'undo').map((r) => [r.result, r.forced]);
    expect(undo).toEqual([
      ['would-undo', true],
      ['refused', false],
      ['undone', true],
    ]);
  });

  it('refuses an older run whose paths a later kept run changed, naming that run', async () => {
    let n = 0;
    const { sandbox } = setup((ws) => writeFileSync(path.join(ws, 'f'), String(n++)));
    const first = await sandbox.execute({ sessionId: 's', program: 'w' });
    const second = await sandbox.execute({ sessionId: 's', program: 'w' });
    const refused = await sandbox.undo(first.details?.runId as string);
    expect(refused.undone).toBe(false);
    expect(refused.conflicts[0]?.reason).toContain(second.details?.runId as string);
    expect((await sandbox.undo(second.details?.runId as string)).undone).toBe(true);
    expect((await sandbox.undo(first.details?.runId as string)).undone).toBe(true);
  });

  it('an unknown or malformed run id is ALEPH_RUN_UNKNOWN, audited', async () => {
    const log = records();
    const { sandbox } = setup(() => {});
    const unknown = await rejection(sandbox.undo(newRunId()));
    expect(unknown.code).toBe('ALEPH_RUN_UNKNOWN');
    expect(unknown.message).toContain('runId');
    const bad = await rejection(sandbox.undo('../../etc'));
    expect(bad.code).toBe('ALEPH_RUN_UNKNOWN');
    expect(bad.message).toContain('is not a run id');
    expect((await rejection(sandbox.changes({ runId: newRunId() }))).code).toBe('ALEPH_RUN_UNKNOWN');
    const undo = log.filter((r): r is UndoRecord => r.type === 'undo');
    expect(undo.map((r) => [r.result, r.error?.code])).toEqual([
      ['error', 'ALEPH_RUN_UNKNOWN'],
      ['error', 'ALEPH_RUN_UNKNOWN'],
    ]);
  });

  it('bad options name the field', async () => {
    const { sandbox } = setup(() => {});
    const e = await rejection(sandbox.undo(newRunId(), { force: 'yes' as unknown as boolean }));
    expect(e.code).toBe('ALEPH_INVALID_COMMAND');
    expect(e.message).toContain('force');
    expect((await rejection(sandbox.changes({ limit: 0 }))).message).toContain('limit');
    expect((await rejection(sandbox.changes({ workspace: 'rel' }))).message).toContain('workspace');
  });

  it('is ALEPH_UNDO_UNAVAILABLE on a driver without undo, and for a run whose copies were not kept', async () => {
    const plain = new WorkspaceSandbox({ driver: createFakeDriver(), workspaceRoot: tempDir() });
    const out = await plain.execute({ sessionId: 's', program: 'true' });
    expect((await rejection(plain.undo(out.details?.runId as string))).code).toBe('ALEPH_UNDO_UNAVAILABLE');
    expect((await rejection(plain.changes())).code).toBe('ALEPH_UNDO_UNAVAILABLE');
    const sizes = ['x'.repeat(10), 'x'.repeat(100), 'y'.repeat(100)];
    const { sandbox } = setup((ws) => writeFileSync(path.join(ws, 'big'), sizes.shift() ?? ''), {
      changes: { maxFileBytes: 50 },
    });
    await sandbox.execute({ sessionId: 's', program: 'w' });
    const grow = await sandbox.execute({ sessionId: 's', program: 'w' });
    const shrink = await sandbox.execute({ sessionId: 's', program: 'w' });
    expect(changesOf(grow.details)?.undoable).toBe(true);
    expect(changesOf(shrink.details)?.undoable).toBe(false);
    const e = await rejection(sandbox.undo(shrink.details?.runId as string));
    expect(e.code).toBe('ALEPH_UNDO_UNAVAILABLE');
    expect(e.message).toContain('larger than the per-file cap');
    const unrecorded = setup(() => {}, { changes: { unrecorded: 'no journal here' } });
    const u = await unrecorded.sandbox.execute({ sessionId: 's', program: 'x' });
    expect(changesOf(u.details)?.recorded).toBe(false);
    expect((await rejection(unrecorded.sandbox.undo(u.details?.runId as string))).message).toContain(
      'no journal here',
    );
  });

  it('a session handle undoes and lists only its own runs', async () => {
    const { sandbox } = setup((ws, r) => writeFileSync(path.join(ws, String(r.sessionId)), 'x'));
    const a = handle(sandbox.session('a'));
    const b = handle(sandbox.session('b'));
    const outA = await a.execute({ program: 'w' });
    const outB = await b.execute({ program: 'w' });
    expect((await a.changes()).map((r) => r.runId)).toEqual([outA.details?.runId]);
    expect((await a.changes({ runId: outA.details?.runId as string })).length).toBe(1);
    const other = await rejection(a.undo(outB.details?.runId as string));
    expect(other.code).toBe('ALEPH_RUN_UNKNOWN');
    expect(other.message).toContain('another session');
    expect((await rejection(a.changes({ runId: outB.details?.runId as string }))).code).toBe(
      'ALEPH_RUN_UNKNOWN',
    );
    const log = records();
    expect((await a.undo(outA.details?.runId as string)).undone).toBe(true);
    expect(log.at(-1)).toMatchObject({ type: 'undo', sessionId: 'a', sessionKey: sessionKeyToFilename('a') });
    await a.close();
    expect((await rejection(a.undo(outA.details?.runId as string))).code).toBe('ALEPH_SESSION_CLOSED');
  });

  it('lists a workspace newest first, at most limit', async () => {
    const { sandbox } = setup((ws) => writeFileSync(path.join(ws, `f${Math.random()}`), 'x'));
    const ids: string[] = [];
    for (let i = 0; i < 3; i++)
      ids.push((await sandbox.execute({ sessionId: 's', program: 'w' })).details?.runId as string);
    const ws = await sandbox.session('s').workspace();
    const listed = await sandbox.changes({ workspace: ws, limit: 2 });
    expect(listed.map((r) => r.runId)).toEqual([ids[2], ids[1]]);
    expect(listed[0]?.command).toBe('w');
  });

  it('is refused after dispose, and by a disabled sandbox', async () => {
    const { sandbox } = setup(() => {});
    await sandbox.dispose();
    expect((await rejection(sandbox.undo(newRunId()))).code).toBe('ALEPH_DISPOSED');
    const noop = new NoopSandbox();
    expect((await rejection(noop.undo(newRunId()))).code).toBe('ALEPH_SANDBOX_DISABLED');
    expect((await rejection(noop.session('s').undo?.(newRunId()) ?? Promise.resolve())).code).toBe(
      'ALEPH_SANDBOX_DISABLED',
    );
  });
});
