import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  type AlephError,
  ApprovalGate,
  isAlephError,
  NoopSandbox,
  RateLimitHook,
  sessionKeyToFilename,
  WorkspaceSandbox,
  withSession,
} from '../src/index.js';
import {
  createFakeDriver,
  FakeApprovalRequester,
  type FakeDriverOptions,
  MockSandbox,
} from '../src/testing.js';
import { recordLedger, tempDir } from './helpers.js';

const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array) => new TextDecoder().decode(b);

async function rejection(p: Promise<unknown>): Promise<AlephError> {
  try {
    await p;
  } catch (e) {
    if (isAlephError(e)) return e;
    throw e;
  }
  throw new Error('expected a rejection');
}

async function readAll(stream: ReadableStream<Uint8Array>): Promise<string> {
  let out = '';
  for await (const chunk of stream as unknown as AsyncIterable<Uint8Array>) out += dec(chunk);
  return out;
}

function setup(driverOptions: FakeDriverOptions = {}, outcome: 'approved' | 'denied' = 'denied') {
  const root = tempDir();
  const driver = createFakeDriver(driverOptions);
  const sandbox = new WorkspaceSandbox({
    driver,
    workspaceRoot: root,
    approvalGate: new ApprovalGate({ requester: new FakeApprovalRequester({ outcome }), timeoutMs: 1000 }),
  });
  return { root, driver, sandbox };
}

describe('spawn()', () => {
  it('streams the output, then wait() gives the same SandboxOutput execute() gives; one audit record', async () => {
    const records = recordLedger();
    const { sandbox } = setup({ output: { stdout: enc('out'), stderr: enc('err'), exitCode: 3 } });
    const proc = await sandbox.spawn({ sessionId: 's', program: 'x' });
    expect(proc.stdin).toBeNull();
    const [out, err] = await Promise.all([readAll(proc.stdout), readAll(proc.stderr)]);
    expect([out, err]).toEqual(['out', 'err']);
    const result = await proc.wait();
    expect(result.exitCode).toBe(3);
    expect(result.stdoutText).toBe('out');
    expect(proc.exited).toBe(true);
    expect(proc.wait()).toBe(proc.wait());
    expect(records.filter((r) => r.type === 'capability_ledger')).toHaveLength(1);
    expect(records[0]).toMatchObject({ program: 'x', outcome: 'completed', exitCode: 3 });
  });

  it("stdin: 'pipe' streams what is written, EOF on close", async () => {
    const { sandbox, driver } = setup({ echoStdin: true });
    const proc = await sandbox.spawn({ sessionId: 's', program: 'cat', stdin: 'pipe' });
    const writer = proc.stdin.getWriter();
    const reading = readAll(proc.stdout);
    await writer.write(enc('hello '));
    await writer.write(enc('world'));
    await writer.close();
    expect(await reading).toBe('hello world');
    expect((await proc.wait()).stdoutText).toBe('hello world');
    expect(driver.requests[0]?.stdin).toBeDefined();
  });

  it('text stdin is written then closed, as for execute()', async () => {
    const { sandbox } = setup({ output: (r) => ({ stdout: enc(`stdin=${String(r.stdin)}`) }) });
    const proc = await sandbox.spawn({ sessionId: 's', program: 'cat', stdin: 'data' });
    expect((await proc.wait()).stdoutText).toBe('stdin=data');
  });

  it('writing to stdin after the process ended rejects with ALEPH_PROCESS_EXITED', async () => {
    const { sandbox } = setup({ runMs: Number.POSITIVE_INFINITY });
    const proc = await sandbox.spawn({ sessionId: 's', program: 'cat', stdin: 'pipe' });
    await proc.kill();
    const error = await rejection(proc.stdin.getWriter().write(enc('late')));
    expect(error.code).toBe('ALEPH_PROCESS_EXITED');
    expect(error.message).toMatch(/stdin: the process has exited.*spawn the command again/);
  });

  it("kill() ends the run: wait() resolves with killedBy 'kill', outcome killed; idempotent", async () => {
    const records = recordLedger();
    const { sandbox } = setup({ runMs: Number.POSITIVE_INFINITY });
    const proc = await sandbox.spawn({ sessionId: 's', program: 'sleep' });
    expect(proc.exited).toBe(false);
    await Promise.all([proc.kill(), proc.kill('SIGTERM')]);
    await proc.kill();
    const out = await proc.wait();
    expect(out.details).toMatchObject({ killedBy: 'kill' });
    expect(out.timedOut).toBe(false);
    expect(records.at(-1)).toMatchObject({ outcome: 'killed' });
  });

  it('kill() refuses a signal it does not send, naming it and the fix', async () => {
    const { sandbox } = setup({ runMs: Number.POSITIVE_INFINITY });
    const proc = await sandbox.spawn({ sessionId: 's', program: 'sleep' });
    const error = await rejection(proc.kill('SIGHUP' as never));
    expect(error.code).toBe('ALEPH_INVALID_COMMAND');
    expect(error.message).toMatch(/kill signal is not a signal kill\(\) sends \(got "SIGHUP"\); pass one of/);
    await proc.kill();
  });

  it('the caller signal aborts: wait() rejects ALEPH_ABORTED, outcome aborted; streams close', async () => {
    const records = recordLedger();
    const { sandbox } = setup({ runMs: Number.POSITIVE_INFINITY });
    const controller = new AbortController();
    const proc = await sandbox.spawn({ sessionId: 's', program: 'sleep' }, { signal: controller.signal });
    controller.abort(new Error('user pressed stop'));
    expect((await rejection(proc.wait())).code).toBe('ALEPH_ABORTED');
    expect(await readAll(proc.stdout)).toBe('');
    expect(records.at(-1)).toMatchObject({ outcome: 'aborted' });
  });

  it('an already aborted signal rejects spawn() itself', async () => {
    const { sandbox, driver } = setup();
    const error = await rejection(
      sandbox.spawn({ sessionId: 's', program: 'x' }, { signal: AbortSignal.abort() }),
    );
    expect(error.code).toBe('ALEPH_ABORTED');
    expect(driver.runCount).toBe(0);
  });

  it('the timeout ends the run as for execute(): timedOut, killedBy timeout', async () => {
    const { sandbox } = setup({ runMs: Number.POSITIVE_INFINITY });
    const proc = await sandbox.spawn({ sessionId: 's', program: 'sleep', timeout: 50 });
    const out = await proc.wait();
    expect(out.timedOut).toBe(true);
    expect(out.details).toMatchObject({ killedBy: 'timeout' });
  });

  it('a denial rejects spawn() exactly as execute(): policy, capability; audited, nothing run', async () => {
    const records = recordLedger();
    const { sandbox, driver } = setup();
    const denied = await rejection(
      sandbox.spawn({ sessionId: 's', program: 'curl', capabilities: { network: { kind: 'allowAll' } } }),
    );
    expect(denied.code).toBe('ALEPH_CAPABILITY_DENIED');
    const limited = new WorkspaceSandbox({
      driver,
      workspaceRoot: tempDir(),
      hooks: [new RateLimitHook({ capacity: 1, refillPerSecond: 0.001 })],
    });
    await (await limited.spawn({ sessionId: 'r', program: 'x' })).wait();
    expect((await rejection(limited.spawn({ sessionId: 'r', program: 'x' }))).code).toBe(
      'ALEPH_RATE_LIMITED',
    );
    expect(driver.runCount).toBe(1);
    expect(records.map((r) => (r as { outcome: string }).outcome)).toEqual(['denied', 'completed', 'denied']);
    // An adapter's own operation (execute with `derived`) is not the model's: the limit lets it run.
    const session = limited.session('r');
    expect((await session.execute({ program: 'x' }, { derived: true })).exitCode).toBe(0);
    expect((await rejection(session.execute({ program: 'x' }))).code).toBe('ALEPH_RATE_LIMITED');
    expect(driver.runCount).toBe(2);
  });

  it("stdin 'pipe' on a driver without exec.stdin-stream is refused before anything runs", async () => {
    const { sandbox, driver } = setup({
      capabilities: ['exec', 'fs.confine', 'net.none', 'proc.deny-spawn'],
    });
    const error = await rejection(sandbox.spawn({ sessionId: 's', program: 'cat', stdin: 'pipe' }));
    expect(error.code).toBe('ALEPH_CAPABILITY_UNSUPPORTED');
    expect(error.message).toMatch(/cannot stream stdin.*exec\.stdin-stream.*instead of 'pipe'/);
    expect(driver.runCount).toBe(0);
  });

  it('an unread stdout pauses the run (backpressure) and the timeout still ends it', async () => {
    const big = new Uint8Array(1024 * 1024).fill(65);
    let pushed = 0;
    const { sandbox } = setup({
      output: async (r) => {
        // Push in 16 KiB chunks, as a pipe would, honouring the returned promises.
        for (let off = 0; off < big.byteLength; off += 16 * 1024) {
          const pending = r.onStdout?.(big.subarray(off, off + 16 * 1024));
          pushed += 16 * 1024;
          if (pending !== undefined) {
            const stopped = await Promise.race([
              Promise.resolve(pending).then(() => false),
              new Promise<boolean>((res) => setTimeout(() => res(true), 200)),
            ]);
            if (stopped) break;
          }
        }
        return { exitCode: 0 };
      },
    });
    const proc = await sandbox.spawn({ sessionId: 's', program: 'yes' });
    await proc.wait();
    // The queue holds 64 KiB: the producer was held back right after it.
    expect(pushed).toBeLessThanOrEqual(96 * 1024);
  });
});

describe('session()', () => {
  it('binds the id: spawn, execute and files act in its workspace; a relative cwd is resolved there', async () => {
    const { sandbox, driver, root } = setup();
    const session = sandbox.session('chat-1');
    const ws = await session.workspace();
    expect(ws).toBe(path.join(root, sessionKeyToFilename('chat-1')));
    await session.files.writeFile('sub/a.txt', 'hi');
    await session.execute({ program: 'ls', cwd: 'sub' });
    await (await session.spawn({ program: 'ls' })).wait();
    expect(driver.requests.map((r) => [r.sessionId, r.cwd])).toEqual([
      ['chat-1', path.join(ws, 'sub')],
      ['chat-1', ws],
    ]);
  });

  it('refuses a command naming another session', async () => {
    const { sandbox } = setup();
    const error = await rejection(sandbox.session('a').execute({ sessionId: 'b', program: 'ls' }));
    expect(error.code).toBe('ALEPH_INVALID_COMMAND');
    expect(error.message).toMatch(/command\.sessionId differs from the session handle's id "a"/);
  });

  it('without an id: the withSession() id, else a fresh one', async () => {
    const { sandbox } = setup();
    expect(withSession('scoped', () => sandbox.session().sessionId)).toBe('scoped');
    const a = sandbox.session().sessionId;
    expect(typeof a).toBe('string');
    expect(a).not.toBe(sandbox.session().sessionId);
  });

  it("close() kills its processes (killedBy 'kill'), then every call is ALEPH_SESSION_CLOSED; idempotent", async () => {
    const { sandbox } = setup({ runMs: Number.POSITIVE_INFINITY });
    const session = sandbox.session('s');
    const proc = await session.spawn({ program: 'sleep' });
    const running = session.execute({ program: 'sleep' });
    await Promise.all([session.close(), session.close()]);
    expect((await proc.wait()).details).toMatchObject({ killedBy: 'kill' });
    expect((await running).details).toMatchObject({ killedBy: 'kill' });
    expect(session.closed).toBe(true);
    for (const call of [
      () => session.spawn({ program: 'x' }),
      () => session.execute({ program: 'x' }),
      () => session.files.readFile('a'),
      () => session.workspace(),
    ]) {
      const error = await rejection(call());
      expect(error.code).toBe('ALEPH_SESSION_CLOSED');
      expect(error.message).toMatch(/this handle was closed; get a new one with sandbox\.session\(id\)/);
    }
    // Another handle for the same id still works.
    await expect(sandbox.session('s').workspace()).resolves.toContain(sessionKeyToFilename('s'));
  });

  it('a handle closed and then its sandbox disposed (what an adapter close() does) is ALEPH_SESSION_CLOSED, naming both', async () => {
    const { sandbox } = setup();
    const session = sandbox.session('s');
    const untouched = sandbox.session('t');
    await session.close();
    await sandbox.dispose();
    const error = await rejection(session.files.readFile('a'));
    expect(error.code).toBe('ALEPH_SESSION_CLOSED');
    expect(error.message).toBe(
      'session "s": this handle was closed; its sandbox was disposed too: build a new sandbox (or open a new adapter session) to go on (the workspace is still there)',
    );
    // A handle nobody closed: the sandbox's dispose is what stopped it.
    expect((await rejection(untouched.execute({ program: 'x' }))).code).toBe('ALEPH_DISPOSED');
  });

  it('dispose() kills every running process and closes every handle', async () => {
    const { sandbox, driver } = setup({ runMs: Number.POSITIVE_INFINITY });
    const session = sandbox.session('s');
    const a = await session.spawn({ program: 'sleep' });
    const b = await sandbox.spawn({ sessionId: 't', program: 'sleep' });
    await sandbox.dispose();
    expect((await a.wait()).details).toMatchObject({ killedBy: 'kill' });
    expect((await b.wait()).details).toMatchObject({ killedBy: 'kill' });
    expect(session.closed).toBe(true);
    expect((await rejection(session.files.stat('.'))).code).toBe('ALEPH_DISPOSED');
    expect(driver.disposed).toBe(true);
  });

  it('parallel spawns in one session run independently', async () => {
    const { sandbox } = setup({ output: (r) => ({ stdout: enc(r.args.join(' ')) }) });
    const session = sandbox.session('p');
    const procs = await Promise.all(
      Array.from({ length: 10 }, (_, i) => session.spawn({ program: 'echo', args: [String(i)] })),
    );
    const outs = await Promise.all(procs.map((p) => readAll(p.stdout)));
    expect(outs).toEqual(Array.from({ length: 10 }, (_, i) => String(i)));
  });
});

describe('NoopSandbox and MockSandbox sessions', () => {
  it('NoopSandbox: spawn and every session call fail fast with ALEPH_SANDBOX_DISABLED', async () => {
    const noop = new NoopSandbox();
    expect((await rejection(noop.spawn({ sessionId: 's', program: 'ls' }))).code).toBe(
      'ALEPH_SANDBOX_DISABLED',
    );
    const session = noop.session('s');
    expect((await rejection(session.spawn({ program: 'ls' }))).code).toBe('ALEPH_SANDBOX_DISABLED');
    expect((await rejection(session.files.readFile('a'))).code).toBe('ALEPH_SANDBOX_DISABLED');
    await session.close();
  });

  it('MockSandbox: spawn records the command and streams the canned output; files in memory', async () => {
    const mock = new MockSandbox({ stdout: enc('canned') }, { echoStdin: true });
    const session = mock.session('m');
    const proc = await session.spawn({ program: 'cat', stdin: 'pipe' });
    const writer = proc.stdin.getWriter();
    await writer.write(enc('in:'));
    await writer.close();
    expect(await readAll(proc.stdout)).toBe('in:canned');
    expect(mock.commands.map((c) => [c.program, c.sessionId])).toEqual([['cat', 'm']]);
    await session.files.writeFile('d/f.txt', 'a\nb\nc\n');
    expect(await session.files.readTextFile('d/f.txt', { startLine: 2 })).toBe('b\nc\n');
    expect(await session.files.list('d')).toEqual([{ name: 'f.txt', type: 'file' }]);
    expect((await rejection(session.files.readFile('../x'))).code).toBe('ALEPH_PATH_OUTSIDE_WORKSPACE');
    await session.close();
    expect((await rejection(session.execute({ program: 'ls' }))).code).toBe('ALEPH_SESSION_CLOSED');
  });
});
