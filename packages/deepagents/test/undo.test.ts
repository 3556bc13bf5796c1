import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { DriverRunRequest } from '@aleph/sandbox-core';
import { createFakeDriver } from '@aleph/sandbox-core/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { AlephSandbox } from '../src/index.js';

const dirs: string[] = [];
const sandboxes: AlephSandbox[] = [];
afterAll(async () => {
  await Promise.all(sandboxes.map((s) => s.close()));
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** A sandbox on the fake driver recording changes: `sh -c "<file>=<text>"` writes `text` to `file`. */
async function recording() {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'aleph-deepagents-undo-'));
  dirs.push(dir);
  const driver = createFakeDriver({
    changes: true,
    output: (r: DriverRunRequest) => {
      const [file, text] = String(r.args.at(-1)).split('=');
      if (text !== undefined) writeFileSync(path.join(r.workspace, String(file)), text);
      return { exitCode: 0 };
    },
  });
  const sandbox = await AlephSandbox.create({
    config: { sandbox: { workspace_root: path.join(dir, 'workspaces') } },
    driver,
  });
  sandboxes.push(sandbox);
  return sandbox;
}

describe('AlephSandbox: changes and undo', () => {
  it("execute's output names what the command changed and its run id; undo takes it back", async () => {
    const sandbox = await recording();
    await sandbox.execute('f.txt=one');
    const r = await sandbox.execute('f.txt=two');
    const runId =
      /aleph-sandbox: changes: 1 modified \(run (r[0-9a-z]{12}-[0-9a-f]{8}); undo: aleph-sandbox undo \1\)/.exec(
        r.output,
      )?.[1];
    expect(runId, r.output).toBeDefined();
    expect((await sandbox.changes({ limit: 1 }))[0]?.runId).toBe(runId);
    expect((await sandbox.undo(String(runId))).undone).toBe(true);
    expect(readFileSync(path.join(sandbox.workspace, 'f.txt'), 'utf8')).toBe('one');
    await expect(sandbox.undo('nope')).rejects.toMatchObject({ code: 'ALEPH_RUN_UNKNOWN' });
  });
});
