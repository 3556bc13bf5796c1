import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  truncateSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createFakeDriver, type FakeDriverOptions } from '@aleph/sandbox-core/testing';
import { isSandboxBackend } from 'deepagents';
import { afterAll, describe, expect, it } from 'vitest';
import { AlephSandbox, type AlephSandboxOptions } from '../src/index.js';

const posix = process.platform !== 'win32';
const POSIX_ONLY = posix
  ? ''
  : " [skipped on Windows: the adapters run POSIX sh commands, and the fake driver's file mechanism is POSIX-only]";

const dirs: string[] = [];
const sandboxes: AlephSandbox[] = [];
afterAll(async () => {
  await Promise.all(sandboxes.map((s) => s.close()));
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const enc = (s: string) => new TextEncoder().encode(s);

function tempDir(): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'aleph-deepagents-'));
  dirs.push(dir);
  return dir;
}

async function open(options: AlephSandboxOptions = {}, driverOptions: FakeDriverOptions = {}) {
  const dir = tempDir();
  const driver = createFakeDriver(driverOptions);
  const sandbox = await AlephSandbox.create({
    config: { sandbox: { workspace_root: path.join(dir, 'workspaces'), default_timeout_seconds: 7 } },
    driver,
    ...options,
  });
  sandboxes.push(sandbox);
  return { sandbox, driver, dir };
}

describe('AlephSandbox.create', () => {
  it('is a deepagents sandbox backend with a non-empty id', async () => {
    const { sandbox } = await open({ sessionId: 'chat-7' });
    expect(sandbox.id).toBe('aleph:chat-7');
    expect(isSandboxBackend(sandbox)).toBe(true);
    const structured = await open({ sessionId: { thread: 'T1' } });
    expect(structured.sandbox.id).toBe('aleph:{"thread":"T1"}');
  });

  it('checks its options at the edge, naming the option and the fix', async () => {
    await expect(AlephSandbox.create({ commandCapabilities: 'net' as never })).rejects.toThrow(
      /^options\.commandCapabilities is neither capabilities nor a function of the command \(got "net"\)/,
    );
    await expect(AlephSandbox.create({ workspac: 'x' } as never)).rejects.toThrow(
      /options\.workspac is not a known option .*commandCapabilities/,
    );
  });
});

describe.runIf(posix)(`execute${POSIX_ONLY}`, () => {
  it('runs /bin/sh -c in the workspace with the baseline; stdout then stderr; the exit code', async () => {
    const { sandbox, driver } = await open(
      {},
      { output: { exitCode: 2, stdout: enc('out'), stderr: enc('err\n') } },
    );
    expect(await sandbox.execute('make')).toEqual({ output: 'out\nerr\n', exitCode: 2, truncated: false });
    expect(driver.requests[0]?.args).toEqual(['-c', 'make']);
    expect(driver.requests[0]?.cwd).toBe(sandbox.workspace);
    expect(driver.requests[0]?.capabilities.spawnSubprocess).toBe(true);
  });

  it("the sandbox's refusals during a run follow the output, each with what would allow it", async () => {
    const denial = {
      kind: 'network.dns',
      target: 'evil.test',
      reason: "evil.test is not on the allowlist: the sandbox's resolver answered NXDOMAIN",
      allowWith: 'add "evil.test" to the allowed hosts: aleph-sandbox run --net evil.test',
    };
    const { sandbox } = await open(
      {},
      {
        output: {
          exitCode: 6,
          stderr: enc('curl: (6) Could not resolve host: evil.test\n'),
          details: { denials: [denial] },
        },
      },
    );
    expect(await sandbox.execute('curl http://evil.test/')).toEqual({
      output:
        'curl: (6) Could not resolve host: evil.test\naleph-sandbox: denied network.dns evil.test (evil.test is not on the allowlist: the sandbox\'s resolver answered NXDOMAIN); allowed with add "evil.test" to the allowed hosts: aleph-sandbox run --net evil.test',
      exitCode: 6,
      truncated: false,
    });
  });

  it('a timeout is exit 124 with a note; truncation is reported', async () => {
    const { sandbox } = await open(
      {},
      {
        output: {
          exitCode: null,
          signal: 'SIGKILL',
          timedOut: true,
          stdoutTruncated: true,
          stdout: enc('partial'),
        },
      },
    );
    expect(await sandbox.execute('sleep 100')).toEqual({
      output:
        'partial\naleph-sandbox: timed out after 7 s; every process of the command was killed\naleph-sandbox: output beyond the output budget was not kept',
      exitCode: 124,
      truncated: true,
    });
  });

  it('refusals are results the model reads (126), never throws; so is bad input (125/2)', async () => {
    const { sandbox, driver } = await open({ commandCapabilities: { network: { kind: 'allowAll' } } });
    const denied = await sandbox.execute('curl https://example.com');
    expect(denied.exitCode).toBe(126);
    expect(denied.output).toMatch(
      /^aleph-sandbox: ALEPH_CAPABILITY_DENIED: capability denied: approval denied \(non-interactive.*\) for unrestricted network access\. Commands asking for more/,
    );
    const policy = await open();
    expect((await policy.sandbox.execute('rm -rf /')).output).toMatch(
      /^aleph-sandbox: ALEPH_POLICY_DENIED: /,
    );
    expect(await policy.sandbox.execute('echo a\0b')).toMatchObject({
      exitCode: 125,
      output: expect.stringMatching(/^aleph-sandbox: ALEPH_INVALID_COMMAND: .*NUL/),
    });
    expect(await policy.sandbox.execute('  ')).toMatchObject({ exitCode: 2 });
    expect(driver.runCount).toBe(0);
  });

  it('commandCapabilities may be a function of the command; the rest runs at the baseline', async () => {
    const { sandbox } = await open({
      commandCapabilities: (c) =>
        c.startsWith('pip ') ? { network: { kind: 'allowHosts', hosts: ['pypi.org'] } } : undefined,
    });
    expect(sandbox.elevationOf('pip install x')).toEqual(['network access to pypi.org']);
    expect(sandbox.elevationOf('ls')).toEqual([]);
    expect((await sandbox.execute('ls')).exitCode).toBe(0);
    expect((await sandbox.execute('pip install x')).exitCode).toBe(126);
  });

  it('a closed sandbox answers with the reason; close() is idempotent', async () => {
    const { sandbox } = await open();
    await sandbox.close();
    await sandbox.close();
    expect(await sandbox.execute('true')).toMatchObject({
      exitCode: 125,
      output: expect.stringMatching(/ALEPH_(SESSION_CLOSED|DISPOSED)/),
    });
    expect(await sandbox.downloadFiles(['a'])).toEqual([
      { path: 'a', content: null, error: 'permission_denied' },
    ]);
  });
});

describe.runIf(posix)(`uploadFiles and downloadFiles${POSIX_ONLY}`, () => {
  it('one result per path, in order, partial success, never a throw', async () => {
    const { sandbox } = await open();
    const ws = sandbox.workspace;
    mkdirSync(path.join(ws, 'dir'));
    const up = await sandbox.uploadFiles([
      [path.join(ws, 'a/b.txt'), enc('one\ntwo\n')],
      ['rel.txt', enc('relative')],
      [path.join(ws, 'dir'), enc('x')],
      ['bad\0path', enc('x')],
      ['/etc/aleph-outside.txt', enc('x')],
      ['nobytes.txt', 'text' as never],
    ]);
    expect(up.map((r) => r.error)).toEqual([
      null,
      null,
      'is_directory',
      'invalid_path',
      'permission_denied',
      'invalid_path',
    ]);
    expect(readFileSync(path.join(ws, 'a/b.txt'), 'utf8')).toBe('one\ntwo\n');
    expect(readFileSync(path.join(ws, 'rel.txt'), 'utf8')).toBe('relative');
    const down = await sandbox.downloadFiles([
      path.join(ws, 'a/b.txt'),
      'missing.txt',
      'dir',
      'a/b.txt/below',
    ]);
    expect(
      down.map((r) => [r.error, r.content === null ? null : new TextDecoder().decode(r.content)]),
    ).toEqual([
      [null, 'one\ntwo\n'],
      ['file_not_found', null],
      ['is_directory', null],
      ['invalid_path', null],
    ]);
  });

  it("deepagents' own paths never reach the host: outside an agent run they are refused; near misses stay confined", async () => {
    const { sandbox, dir } = await open();
    const dotDot = `/large_tool_results/../..${dir}/escaped.txt`;
    expect(
      await sandbox.uploadFiles([
        ['/large_tool_results/t1.txt', enc('x')],
        [dotDot, enc('x')],
        ['/conversation_history/h.md', enc('x')],
        [path.join(sandbox.workspace, 'ok.txt'), enc('ok')],
        ['//large_tool_results/t1.txt', enc('x')],
      ]),
    ).toEqual([
      { path: '/large_tool_results/t1.txt', error: 'permission_denied' },
      { path: dotDot, error: 'permission_denied' },
      { path: '/conversation_history/h.md', error: 'permission_denied' },
      { path: path.join(sandbox.workspace, 'ok.txt'), error: null },
      { path: '//large_tool_results/t1.txt', error: 'permission_denied' },
    ]);
    expect(existsSync(path.join(dir, 'escaped.txt'))).toBe(false);
    expect(existsSync('/large_tool_results')).toBe(false);
    expect(readdirSync(sandbox.workspace)).toEqual(['ok.txt']);
    expect((await sandbox.write('/large_tool_results/t2.txt', 'x')).error).toMatch(
      /^Error: '\/large_tool_results\/t2\.txt' is deepagents' own file, kept in the agent's state: reachable only while an agent runs/,
    );
    expect(await sandbox.downloadFiles(['/conversation_history/h.md'])).toEqual([
      { path: '/conversation_history/h.md', content: null, error: 'permission_denied' },
    ]);
  });

  it('a link planted to a host secret is refused both ways; the host itself can read it (the control)', async () => {
    const outside = tempDir();
    const secret = path.join(outside, 'id_rsa');
    writeFileSync(secret, 'host secret\n');
    const { sandbox } = await open();
    symlinkSync(secret, path.join(sandbox.workspace, 'innocent.txt'));
    expect(readFileSync(path.join(sandbox.workspace, 'innocent.txt'), 'utf8')).toBe('host secret\n');
    expect(await sandbox.downloadFiles(['innocent.txt'])).toEqual([
      { path: 'innocent.txt', content: null, error: 'permission_denied' },
    ]);
    expect(await sandbox.uploadFiles([['innocent.txt', enc('pwned')]])).toEqual([
      { path: 'innocent.txt', error: 'invalid_path' },
    ]);
    expect(readFileSync(secret, 'utf8')).toBe('host secret\n');
    // deepagents' own edit goes through download/upload: refused too.
    expect((await sandbox.edit('innocent.txt', 'host', 'pwned')).error).toBeDefined();
    expect(readFileSync(secret, 'utf8')).toBe('host secret\n');
  });

  it('a file above the 64 MiB read limit is invalid_path for a download', async () => {
    const { sandbox } = await open();
    const big = path.join(sandbox.workspace, 'big.bin');
    writeFileSync(big, '');
    truncateSync(big, 65 * 1024 * 1024);
    expect(await sandbox.downloadFiles(['big.bin'])).toEqual([
      { path: 'big.bin', content: null, error: 'invalid_path' },
    ]);
  });
});
