import { realpathSync } from 'node:fs';
import path from 'node:path';
import { FakeApprovalRequester } from '@aleph/sandbox-core/testing';
import { describe, expect, it } from 'vitest';
import { createAlephSandboxSession } from '../src/index.js';
import { enc, fakeSession, tempDir, text } from './helpers.js';

const posix = process.platform !== 'win32';
const POSIX_ONLY = posix
  ? ''
  : " [skipped on Windows: the adapters run POSIX sh commands, and the fake driver's file mechanism is POSIX-only]";

describe('createAlephSandboxSession: options', () => {
  it('names an unknown option, the value and the known ones', async () => {
    await expect(createAlephSandboxSession({ workspce: '/tmp' } as never)).rejects.toThrow(
      /options\.workspce is not a known option \(got "\/tmp"\); use one of workspace, config, capabilities/,
    );
  });

  it('refuses a bad workspace, config, capabilities, requester or session id with the fix', async () => {
    await expect(createAlephSandboxSession({ workspace: '' })).rejects.toMatchObject({
      code: 'ALEPH_CONFIG_INVALID',
      message: expect.stringMatching(/^options\.workspace is not a directory path/),
    });
    await expect(createAlephSandboxSession({ config: 42 as never })).rejects.toThrow(
      /options\.config is neither a file path nor settings/,
    );
    await expect(
      createAlephSandboxSession({ config: { sandbox: { default_timeout_seconds: -1 } } }),
    ).rejects.toThrow(/options\.config: sandbox\.default_timeout_seconds/);
    await expect(createAlephSandboxSession({ capabilities: { fsRead: ['relative/path'] } })).rejects.toThrow(
      /options\.capabilities/,
    );
    await expect(createAlephSandboxSession({ approvalRequester: {} as never })).rejects.toThrow(
      /options\.approvalRequester is not an approval requester/,
    );
    await expect(createAlephSandboxSession({ config: '/nonexistent/aleph.toml' })).rejects.toThrow(
      /^config file cannot be read \(ENOENT.*\(got "\/nonexistent\/aleph\.toml"\); check the path/,
    );
    await expect(createAlephSandboxSession({ sessionId: () => 1 } as never)).rejects.toThrow(
      /options\.sessionId/,
    );
  });

  it('works in the given workspace, in place, created when missing', async () => {
    const dir = tempDir();
    const workspace = path.join(dir, 'project', 'deep');
    const { session, driver } = await fakeSession({ workspace });
    expect(session.workspace).toBe(realpathSync(workspace));
    await session.run({ command: 'true' });
    expect(driver.requests[0]?.cwd).toBe(realpathSync(workspace));
    expect(typeof session.sessionId).toBe('string');
  });

  it('describes the sandbox for the model: tier, workspace, network, timeout, how to ask for more', async () => {
    const { session } = await fakeSession(
      { capabilities: { network: { kind: 'allowHosts', hosts: ['pypi.org'] } } },
      {},
      { default_timeout_seconds: 30 },
    );
    expect(session.description).toContain('fake driver, fake (no isolation; runs nothing)');
    expect(session.description).toContain(`Workspace: ${session.workspace}`);
    expect(session.description).toContain('Network: only pypi.org, through a filtering proxy');
    expect(session.description).toContain('Timeout: 30 s per command');
    expect(session.description).toMatch(/must be asked for, and a person approves or denies it/);
  });
});

describe.runIf(posix)(`run and spawn${POSIX_ONLY}`, () => {
  it('runs /bin/sh -c with the baseline (subprocesses allowed), env and a relative working directory', async () => {
    const { session, driver } = await fakeSession(
      {},
      { output: { exitCode: 3, stdout: enc('out'), stderr: enc('err') } },
    );
    await session.writeTextFile({ path: 'sub/keep.txt', content: '' });
    const result = await session.run({ command: 'make all', env: { A: '1' }, workingDirectory: 'sub' });
    expect(result).toEqual({ exitCode: 3, stdout: 'out', stderr: 'err' });
    const request = driver.requests.at(-1);
    expect(request?.program).toBe('/bin/sh');
    expect(request?.args).toEqual(['-c', 'make all']);
    expect(request?.env).toEqual({ A: '1' });
    expect(request?.cwd).toBe(path.join(session.workspace, 'sub'));
    expect(request?.capabilities.spawnSubprocess).toBe(true);
  });

  it('a timeout is exit 124 with a note on stderr; a signal is 128+N', async () => {
    const timed = await fakeSession(
      {},
      { output: { exitCode: null, signal: 'SIGKILL', timedOut: true } },
      { default_timeout_seconds: 5 },
    );
    expect(await timed.session.run({ command: 'sleep 60' })).toEqual({
      exitCode: 124,
      stdout: '',
      stderr: 'aleph-sandbox: timed out after 5 s; every process of the command was killed\n',
    });
    const signalled = await fakeSession({}, { output: { exitCode: null, signal: 'SIGTERM' } });
    expect((await signalled.session.run({ command: 'x' })).exitCode).toBe(143);
  });

  it("the sandbox's refusals during a run (details.denials) reach stderr with what would allow them", async () => {
    const denial = {
      kind: 'network.host',
      target: 'evil.example:443',
      reason: 'not in the allowlist',
      allowWith: 'network: { kind: "allowHosts", hosts: ["evil.example"] }',
    };
    const { session } = await fakeSession({}, { output: { exitCode: 7, details: { denials: [denial] } } });
    const result = await session.run({ command: 'curl https://evil.example' });
    expect(result.exitCode).toBe(7);
    expect(result.stderr).toBe(
      'aleph-sandbox: denied network.host evil.example:443 (not in the allowlist); allowed with network: { kind: "allowHosts", hosts: ["evil.example"] }\n',
    );
  });

  it('a command the policy refuses is exit 126 with the code and why, in run and in spawn; nothing ran', async () => {
    const { session, driver } = await fakeSession();
    const result = await session.run({ command: 'rm -rf /' });
    expect(result.exitCode).toBe(126);
    expect(result.stderr).toMatch(
      /^aleph-sandbox: ALEPH_POLICY_DENIED: command-policy denied the command: .*do it another way\.\n$/,
    );
    const proc = await session.spawn({ command: 'rm -rf /' });
    expect(await text(proc.stderr)).toBe(result.stderr);
    expect(await text(proc.stdout)).toBe('');
    expect(await proc.wait()).toEqual({ exitCode: 126 });
    expect(driver.runCount).toBe(0);
  });

  it('a working directory outside the workspace is a capability refusal the model sees', async () => {
    const { session, driver } = await fakeSession();
    const result = await session.run({ command: 'ls', workingDirectory: '/etc' });
    expect(result.exitCode).toBe(126);
    expect(result.stderr).toMatch(/ALEPH_CAPABILITY_DENIED: capability denied: cwd .*outside/);
    expect(driver.runCount).toBe(0);
  });

  it('asks the configured requester for nothing: the baseline needs no approval', async () => {
    const requester = new FakeApprovalRequester({ outcome: 'denied' });
    const { session } = await fakeSession({ approvalRequester: requester });
    expect((await session.run({ command: 'ls' })).exitCode).toBe(0);
    expect(requester.requests).toEqual([]);
  });

  it('spawn streams stdout, takes stdin with stdin: true, and has no stdin without it', async () => {
    const { session } = await fakeSession({}, { echoStdin: true });
    const proc = await session.spawn({ command: 'cat', stdin: true });
    const writer = proc.stdin.getWriter();
    await writer.write(enc('hello '));
    await writer.write(enc('world'));
    await writer.close();
    expect(await text(proc.stdout)).toBe('hello world');
    expect(await proc.wait()).toEqual({ exitCode: 0 });
    const plain = await session.spawn({ command: 'true' });
    expect('stdin' in plain).toBe(false);
    await plain.wait();
  });

  it('kill() ends the process (137), twice at once; the timeout note reaches the stderr stream', async () => {
    const { session } = await fakeSession({}, { runMs: Number.POSITIVE_INFINITY });
    const proc = await session.spawn({ command: 'sleep 1000' });
    await Promise.all([proc.kill(), proc.kill()]);
    expect(await proc.wait()).toEqual({ exitCode: 137 });
    expect(await text(proc.stderr)).toBe('aleph-sandbox: the command was killed\n');
  });

  it("writing to a killed process's stdin rejects with ALEPH_PROCESS_EXITED", async () => {
    const { session } = await fakeSession({}, { echoStdin: true, runMs: Number.POSITIVE_INFINITY });
    const proc = await session.spawn({ command: 'cat', stdin: true });
    await proc.kill();
    await expect(proc.stdin.getWriter().write(enc('late'))).rejects.toMatchObject({
      code: 'ALEPH_PROCESS_EXITED',
    });
  });

  it('an abort rejects wait() and run() with the abort reason; an aborted signal starts nothing', async () => {
    const { session, driver } = await fakeSession({}, { runMs: Number.POSITIVE_INFINITY });
    const controller = new AbortController();
    const proc = await session.spawn({ command: 'sleep 1000', abortSignal: controller.signal });
    const reason = new Error('user pressed stop');
    controller.abort(reason);
    await expect(proc.wait()).rejects.toBe(reason);
    const second = new AbortController();
    const running = session.run({ command: 'sleep 1000', abortSignal: second.signal });
    setTimeout(() => second.abort(reason), 10);
    await expect(running).rejects.toBe(reason);
    const before = driver.runCount;
    await expect(session.run({ command: 'true', abortSignal: AbortSignal.abort(reason) })).rejects.toBe(
      reason,
    );
    expect(driver.runCount).toBe(before);
  });

  it('bad input names the field and the fix', async () => {
    const { session } = await fakeSession();
    await expect(session.run({ command: '' })).rejects.toThrow(
      /^command is not a shell command \(got ""\); pass the command line/,
    );
    await expect(session.run({ command: 'ls', workingDirectory: 7 as never })).rejects.toThrow(
      /workingDirectory is not a path/,
    );
    await expect(session.run({ command: 'echo', env: { 'A=B': 'x' } })).rejects.toMatchObject({
      code: 'ALEPH_INVALID_COMMAND',
    });
  });

  it('after close(), every call rejects with ALEPH_SESSION_CLOSED and running commands were killed', async () => {
    const { session } = await fakeSession({}, { runMs: Number.POSITIVE_INFINITY });
    const proc = await session.spawn({ command: 'sleep 1000' });
    await session.close();
    expect(await proc.wait()).toEqual({ exitCode: 137 });
    const closed = {
      code: 'ALEPH_SESSION_CLOSED',
      message: `session ${JSON.stringify(session.sessionId)}: this session was closed (its sandbox released); call createAlephSandboxSession(options) for a new one to go on (the workspace is still there)`,
    };
    await expect(session.run({ command: 'true' })).rejects.toMatchObject(closed);
    await expect(session.spawn({ command: 'true' })).rejects.toMatchObject(closed);
    await expect(session.readTextFile({ path: 'a' })).rejects.toMatchObject(closed);
    await expect(session.writeTextFile({ path: 'a', content: 'x' })).rejects.toMatchObject(closed);
    await session.close();
    await expect(session.readBinaryFile({ path: 'a' })).rejects.toMatchObject(closed);
  });
});
