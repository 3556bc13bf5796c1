import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { DriverRunRequest } from '@aleph/sandbox-core';
import { describe, expect, it } from 'vitest';
import { type AlephShellOutput, createAlephShellTool } from '../src/index.js';
import { fakeSession } from './helpers.js';

/** The fake driver's runs of `sh -c "<file>=<text>"` write `text` to `file` of the workspace. */
const writes = {
  changes: true,
  output: (r: DriverRunRequest) => {
    const [file, text] = String(r.args.at(-1)).split('=');
    if (text !== undefined) writeFileSync(path.join(r.workspace, String(file)), text);
    return { exitCode: 0 };
  },
};

async function lastOf(gen: AsyncIterable<AlephShellOutput>): Promise<AlephShellOutput> {
  let last: AlephShellOutput | undefined;
  for await (const r of gen) last = r;
  return last as AlephShellOutput;
}

describe('runId, changes and undo in the AI SDK adapter', () => {
  it('the shell tool result names the run and what it changed; session.undo takes it back', async () => {
    const { session } = await fakeSession({}, writes);
    const shell = createAlephShellTool(session);
    const run = (command: string) =>
      lastOf(
        shell.execute?.({ command }, {
          toolCallId: 't',
          messages: [],
        } as never) as AsyncIterable<AlephShellOutput>,
      );
    const first = await run('a.txt=one');
    expect(first.runId).toMatch(/^r[0-9a-z]{12}-[0-9a-f]{8}$/);
    expect(first.changes).toEqual({ created: 1, modified: 0, deleted: 0, renamed: 0, quarantined: 0 });
    expect(first.stderr).toContain(
      `aleph-sandbox: changes: 1 created (run ${first.runId}; undo: aleph-sandbox undo ${first.runId})`,
    );
    const second = await run('a.txt=two');
    expect(second.changes?.modified).toBe(1);
    const quiet = await run('true');
    expect(quiet.runId).toBeUndefined();
    expect(quiet.stderr).toBe('');

    const kept = await session.changes();
    expect(kept.filter((r) => r.changes.entries.length > 0).map((r) => r.runId)).toEqual([
      second.runId,
      first.runId,
    ]);
    const refused = await session.undo(String(first.runId));
    expect(refused.undone).toBe(false);
    expect(refused.conflicts[0]?.reason).toContain(String(second.runId));
    expect((await session.undo(String(second.runId))).undone).toBe(true);
    expect(readFileSync(path.join(session.workspace, 'a.txt'), 'utf8')).toBe('one');
    const out = await session.run({ command: 'b.txt=x' });
    expect(out.stderr).toMatch(/aleph-sandbox: changes: 1 created \(run r/);
    await session.close();
    await expect(session.undo(String(first.runId))).rejects.toMatchObject({ code: 'ALEPH_SESSION_CLOSED' });
  });

  it('undo without change recording is ALEPH_UNDO_UNAVAILABLE; an unknown run is ALEPH_RUN_UNKNOWN', async () => {
    const { session } = await fakeSession();
    await expect(session.undo('r000000000000-00000000')).rejects.toMatchObject({
      code: 'ALEPH_UNDO_UNAVAILABLE',
    });
    const recording = await fakeSession({}, writes);
    await expect(recording.session.undo('r000000000000-00000000')).rejects.toMatchObject({
      code: 'ALEPH_RUN_UNKNOWN',
    });
  });
});
