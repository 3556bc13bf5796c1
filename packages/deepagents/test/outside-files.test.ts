// write_file and edit_file on a path outside the workspace (the session's /tmp): a fixed script run in the
// sandbox with the path as its argument and the content as its stdin, and every failure an `error`. The
// fake driver plays the sandbox: it runs the script's effect on a host directory standing for /tmp.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { DriverRunRequest } from '@aleph/sandbox-core';
import { createFakeDriver } from '@aleph/sandbox-core/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { AlephSandbox } from '../src/index.js';

const posix = process.platform !== 'win32';
const POSIX_ONLY = posix ? '' : ' [skipped on Windows: the adapter runs POSIX sh scripts]';

const dirs: string[] = [];
const sandboxes: AlephSandbox[] = [];
afterAll(async () => {
  await Promise.all(sandboxes.map((s) => s.close()));
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const enc = (s: string) => new TextEncoder().encode(s);

/** A sandbox whose /tmp is `tmp` on the host, as far as the two scripts go. */
async function open(rateLimit?: { capacity: number; refill_per_second: number }) {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'aleph-deepagents-outside-'));
  dirs.push(dir);
  const tmp = path.join(dir, 'tmp');
  mkdirSync(tmp);
  const onHost = (p: string) => path.join(tmp, path.relative('/tmp', p));
  const driver = createFakeDriver({
    output: (request: DriverRunRequest) => {
      const [, script, , target] = request.args as string[];
      if (target === undefined || !target.startsWith('/tmp/'))
        return { exitCode: 1, stderr: enc('Read-only file system\n') };
      if (script?.includes('cat > "$1"')) {
        mkdirSync(path.dirname(onHost(target)), { recursive: true });
        writeFileSync(onHost(target), request.stdin as Uint8Array);
        return { exitCode: 0 };
      }
      try {
        return { exitCode: 0, stdout: readFileSync(onHost(target)) };
      } catch {
        return { exitCode: 3 };
      }
    },
  });
  const sandbox = await AlephSandbox.create({
    config: {
      sandbox: {
        workspace_root: path.join(dir, 'workspaces'),
        ...(rateLimit === undefined ? {} : { rate_limit: rateLimit }),
      },
    },
    driver,
  });
  sandboxes.push(sandbox);
  return { sandbox, driver, tmp };
}

describe.runIf(posix)(`write and edit outside the workspace${POSIX_ONLY}`, () => {
  it('write: the path is an argument and the content stdin of a fixed script, at the baseline', async () => {
    const { sandbox, driver, tmp } = await open();
    const path1 = "/tmp/dl/a $(touch x) 'b'.txt";
    expect(await sandbox.write(path1, 'первая\n')).toEqual({ path: path1, filesUpdate: null });
    const req = driver.requests.at(-1) as DriverRunRequest;
    expect(req.program).toBe('/bin/sh');
    expect(req.args).toEqual(['-c', 'mkdir -p -- "$(dirname -- "$1")" && cat > "$1"', 'sh', path1]);
    expect(new TextDecoder().decode(req.stdin as Uint8Array)).toBe('первая\n');
    expect(readFileSync(path.join(tmp, "dl/a $(touch x) 'b'.txt"), 'utf8')).toBe('первая\n');
    await sandbox.execute('true');
    expect(req.capabilities).toEqual(driver.requests.at(-1)?.capabilities);
  });

  it('edit: read, replaced, written back; deepagents’ errors for a missing file and a missing string', async () => {
    const { sandbox, tmp } = await open();
    writeFileSync(path.join(tmp, 'n.txt'), 'alpha\nbeta\nalpha\n');
    expect(await sandbox.edit('/tmp/n.txt', 'beta', 'BETA')).toEqual({
      path: '/tmp/n.txt',
      filesUpdate: null,
      occurrences: 1,
    });
    expect(readFileSync(path.join(tmp, 'n.txt'), 'utf8')).toBe('alpha\nBETA\nalpha\n');
    expect((await sandbox.edit('/tmp/n.txt', 'alpha', 'x')).error).toMatch(/^Multiple occurrences/);
    expect(await sandbox.edit('/tmp/n.txt', 'gamma', 'x')).toEqual({
      error: "String not found in file '/tmp/n.txt'",
    });
    expect(await sandbox.edit('/tmp/none.txt', 'a', 'b')).toEqual({
      error: "Error: File '/tmp/none.txt' not found",
    });
  });

  it("what the sandbox refuses is the error; the rate limit of the model's commands is not for these", async () => {
    const { sandbox } = await open();
    expect(await sandbox.write('/usr/x.txt', 'x')).toEqual({
      error: 'Failed to write to /usr/x.txt: Read-only file system',
    });
    const limited = await open({ capacity: 1, refill_per_second: 0 });
    expect(await limited.sandbox.write('/tmp/one.txt', '1')).toEqual({
      path: '/tmp/one.txt',
      filesUpdate: null,
    });
    for (let i = 0; i < 5; i++)
      expect(await limited.sandbox.write(`/tmp/w${i}.txt`, `${i}`)).toEqual({
        path: `/tmp/w${i}.txt`,
        filesUpdate: null,
      });
    expect((await limited.sandbox.edit('/tmp/one.txt', '1', '2')).error).toBeUndefined();
    // The model's own command still takes the one token, and the next is refused.
    expect((await limited.sandbox.execute('true')).output).not.toMatch(/ALEPH_RATE_LIMITED/);
    expect((await limited.sandbox.execute('true')).output).toMatch(/ALEPH_RATE_LIMITED/);
    expect((await limited.sandbox.write('/tmp/two.txt', '2')).error).toBeUndefined();
  });

  it('a path inside the workspace never runs a command', async () => {
    const { sandbox, driver } = await open();
    await sandbox.write('in.txt', 'x');
    await sandbox.edit(path.join(sandbox.workspace, 'in.txt'), 'x', 'y');
    expect(driver.requests).toEqual([]);
  });
});
