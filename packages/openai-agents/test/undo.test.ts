import { readFileSync } from 'node:fs';
import path from 'node:path';
import { createSandboxOutput, type OsSandboxDriver } from '@aleph/sandbox-core';
import { FakeChangeStore } from '@aleph/sandbox-core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { AlephSandboxClient, type AlephSandboxSession } from '../src/index.js';
import { createPlainDriver, tempDirs, testOptions } from './plain-driver.js';

const tempDir = tempDirs();
const open: AlephSandboxSession[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((s) => s.close()));
});

/** A session on the plain driver, its runs' changes recorded by the fake change store. */
async function recording() {
  const plain = createPlainDriver();
  const store = new FakeChangeStore();
  const driver: OsSandboxDriver = {
    ...plain,
    async run(request) {
      const [out, changes] = await store.record(request, () => plain.run(request));
      return createSandboxOutput({ ...out, details: { ...out.details, changes } });
    },
    undo: (request) => store.undo(request),
    changes: (request) => store.changes(request),
  };
  const s = await new AlephSandboxClient(testOptions(tempDir(), driver)).create();
  open.push(s);
  return s;
}

describe('AlephSandboxSession: changes and undo', () => {
  it("a command's output names what it changed and its run id; undo takes it back", async () => {
    const s = await recording();
    const text = await s.execCommand({ cmd: 'echo one > a.txt', login: false });
    const runId =
      /\[aleph\] changes: 1 created \(run (r[0-9a-z]{12}-[0-9a-f]{8}); undo: aleph-sandbox undo \1\)/.exec(
        text,
      )?.[1];
    expect(runId, text).toBeDefined();
    expect((await s.changes({ runId: String(runId) }))[0]?.changes.counts.created).toBe(1);
    const result = await s.undo(String(runId));
    expect(result).toMatchObject({ undone: true, removed: [path.join(s.workspacePath, 'a.txt')] });
    expect(() => readFileSync(path.join(s.workspacePath, 'a.txt'))).toThrow();
    expect(await s.execCommand({ cmd: 'true', login: false })).not.toContain('[aleph] changes');
    await expect(s.undo('r000000000000-00000000')).rejects.toMatchObject({ code: 'ALEPH_RUN_UNKNOWN' });
    await s.close();
    await expect(s.undo(String(runId))).rejects.toThrow(/closed/);
  });
});
