import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { DriverRunRequest } from '@aleph/sandbox-core';
import { describe, expect, it } from 'vitest';
import { connect, textOf } from './connect.js';

/** A server whose fake driver records changes; each run's `args[0]` names the file it writes `args[1]` to. */
async function recording() {
  return connect({
    driver: {
      changes: true,
      output: (r: DriverRunRequest) => {
        if (r.args.length >= 2) writeFileSync(path.join(r.workspace, String(r.args[0])), String(r.args[1]));
        return { exitCode: 0 };
      },
    },
  });
}

describe('execute: runId and changes', () => {
  it('the result carries the run id and what the run changed, and says how to take it back', async () => {
    const { call } = await recording();
    const r = await call('execute', { argv: ['write', 'a.txt', 'hello'] });
    const s = r.structuredContent as { runId: string; changes: { counts: { created: number } } };
    expect(s.runId).toMatch(/^r[0-9a-z]{12}-[0-9a-f]{8}$/);
    expect(s.changes.counts.created).toBe(1);
    expect(textOf(r)).toContain(
      `changes: 1 created (run ${s.runId}; to take it back: the undo tool with runId "${s.runId}")`,
    );
    const quiet = await call('execute', { argv: ['true'] });
    expect((quiet.structuredContent as { runId: string }).runId).toMatch(/^r/);
    expect(textOf(quiet)).not.toContain('changes:');
  });
});

describe('undo and changes tools', () => {
  it('undo restores the files, changes lists the runs; a later edit is a refusal naming the path', async () => {
    const { call, app, client } = await recording();
    const ws = await app.sandbox.session(app.sessionId).workspace();
    const first = await call('execute', { argv: ['write', 'f.txt', 'one'] });
    const second = await call('execute', { argv: ['write', 'f.txt', 'two'] });
    const [id1, id2] = [first, second].map((r) => (r.structuredContent as { runId: string }).runId);
    const listed = await call('changes', {});
    expect((listed.structuredContent as { runs: { runId: string }[] }).runs.map((r) => r.runId)).toEqual([
      id2,
      id1,
    ]);
    expect(textOf(await call('changes', { runId: id1 }))).toContain(`created file ${path.join(ws, 'f.txt')}`);

    const refused = await call('undo', { runId: id1 });
    expect(refused.isError).toBe(true);
    expect(textOf(refused)).toContain(`${path.join(ws, 'f.txt')}: changed by the later run ${id2}`);
    expect(readFileSync(path.join(ws, 'f.txt'), 'utf8')).toBe('two');

    const undone = await call('undo', { runId: id2 });
    expect(undone.isError).toBeUndefined();
    expect(undone.structuredContent).toMatchObject({
      runId: id2,
      undone: true,
      restoredCount: 1,
      removedCount: 0,
    });
    expect(readFileSync(path.join(ws, 'f.txt'), 'utf8')).toBe('one');

    writeFileSync(path.join(ws, 'f.txt'), 'edited by the user');
    const conflict = await call('undo', { runId: id1 });
    expect(conflict.isError).toBe(true);
    expect(textOf(conflict)).toContain('force: true');
    const forced = await call('undo', { runId: id1, force: true });
    expect(forced.structuredContent).toMatchObject({ undone: true, removed: [path.join(ws, 'f.txt')] });
    expect(existsSync(path.join(ws, 'f.txt'))).toBe(false);
    const audit = await client.readResource({ uri: 'aleph://audit' });
    const records = JSON.parse(String((audit.contents[0] as { text: string }).text)).records as {
      type: string;
      runId: string;
      result?: string;
    }[];
    expect(records.filter((r) => r.type === 'undo').map((r) => [r.runId, r.result])).toEqual([
      [id1, 'refused'],
      [id2, 'undone'],
      [id1, 'refused'],
      [id1, 'undone'],
    ]);
  });

  it('an undo carried out in part names the paths not put back, with partial: true, as an error', async () => {
    const { call, driver } = await recording();
    const run = await call('execute', { argv: ['write', 'g.txt', 'one'] });
    const runId = (run.structuredContent as { runId: string }).runId;
    // The driver's executor met a path it could not put back once under way (an immutable directory).
    const seam = driver as unknown as { undo: (r: { runId: string }) => Promise<unknown> };
    seam.undo = async (r) => ({
      runId: r.runId,
      undone: false,
      partial: true,
      restored: ['/w/a', '/w/keep/f'],
      removed: [],
      conflicts: [{ path: '/w/keep/f', reason: 'Operation not permitted' }],
    });
    const partly = await call('undo', { runId });
    expect(partly.isError).toBe(true);
    expect(partly.structuredContent).toMatchObject({ undone: false, partial: true });
    expect(textOf(partly)).toContain(`undone in part: 1 path(s) of run ${runId} could not be put back`);
    expect(textOf(partly)).toContain('/w/keep/f: Operation not permitted');
    expect(textOf(partly)).not.toContain('nothing was touched');
  });

  it('an unknown run, a run of another session and a sandbox without undo are errors the model can read', async () => {
    const { call } = await recording();
    const unknown = await call('undo', { runId: 'r000000000000-00000000' });
    expect(unknown.isError).toBe(true);
    expect(unknown.structuredContent).toMatchObject({ error: { code: 'ALEPH_RUN_UNKNOWN' } });
    const other = await call('execute', { argv: ['write', 'x', 'y'], session: 'other' });
    const otherId = (other.structuredContent as { runId: string }).runId;
    const mine = await call('undo', { runId: otherId });
    expect(mine.structuredContent).toMatchObject({ error: { code: 'ALEPH_RUN_UNKNOWN' } });
    expect((await call('undo', { runId: otherId, session: 'other' })).structuredContent).toMatchObject({
      undone: true,
    });
    const bad = await call('undo', { runId: 'r1', force: 'yes' });
    expect(bad.isError).toBe(true);

    const plain = await connect();
    const out = await plain.call('execute', { argv: ['true'] });
    const none = await plain.call('undo', { runId: (out.structuredContent as { runId: string }).runId });
    expect(none.structuredContent).toMatchObject({ error: { code: 'ALEPH_UNDO_UNAVAILABLE' } });
    expect((await plain.call('changes', {})).structuredContent).toMatchObject({
      runs: [],
      error: { code: 'ALEPH_UNDO_UNAVAILABLE' },
    });
  });
});
