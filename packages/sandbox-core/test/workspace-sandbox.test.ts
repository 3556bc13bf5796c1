import { mkdirSync, readdirSync, realpathSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  type AlephError,
  ApprovalGate,
  HookChain,
  isAlephError,
  RateLimitHook,
  type SandboxCommandInput,
  sessionKeyToFilename,
  strictCapabilities,
  WorkspaceSandbox,
  withSession,
} from '../src/index.js';
import { createFakeDriver, FakeApprovalRequester } from '../src/testing.js';
import { recordLedger, tempDir } from './helpers.js';

async function rejection(p: Promise<unknown>): Promise<AlephError> {
  try {
    await p;
  } catch (e) {
    if (isAlephError(e)) return e;
    throw e;
  }
  throw new Error('expected a rejection');
}

function setup(options: { requester?: FakeApprovalRequester; timeoutMs?: number } = {}) {
  const root = tempDir();
  const driver = createFakeDriver({ output: { exitCode: 0, stdout: new TextEncoder().encode('ok') } });
  const requester = options.requester ?? new FakeApprovalRequester({ outcome: 'denied' });
  const sandbox = new WorkspaceSandbox({
    driver,
    workspaceRoot: root,
    approvalGate: new ApprovalGate({ requester, timeoutMs: options.timeoutMs ?? 1000 }),
  });
  return { root, driver, requester, sandbox };
}

describe('WorkspaceSandbox: session resolve', () => {
  it('creates the workspace lazily at workspaceRoot/sessionKeyToFilename(id) and reuses it', async () => {
    const { root, driver, sandbox } = setup();
    expect(readdirSync(root)).toEqual([]);
    await sandbox.execute({ sessionId: 'alice', program: 'ls' });
    await sandbox.execute({ sessionId: 'alice', program: 'ls' });
    expect(readdirSync(root)).toEqual([sessionKeyToFilename('alice')]);
    expect(driver.preparedWorkspaces).toHaveLength(1);
    expect(driver.requests[0]?.cwd).toBe(realpathSync(path.join(root, sessionKeyToFilename('alice'))));
  });

  it('1,000 concurrent executes over 100 sessions create exactly 100 directories, once each', async () => {
    const { root, driver, sandbox } = setup();
    await Promise.all(
      Array.from({ length: 1000 }, (_, i) => sandbox.execute({ sessionId: `s${i % 100}`, program: 'true' })),
    );
    expect(readdirSync(root)).toHaveLength(100);
    expect(driver.preparedWorkspaces).toHaveLength(100);
    expect(new Set(driver.preparedWorkspaces).size).toBe(100);
    expect(driver.runCount).toBe(1000);
  });

  it('takes the session from withSession() when the command has none', async () => {
    const { driver, sandbox } = setup();
    await withSession('ctx', () => sandbox.execute({ program: 'ls' }));
    expect(driver.requests[0]?.sessionId).toBe('ctx');
  });
});

describe('WorkspaceSandbox: cwd validate', () => {
  it('accepts a directory inside the workspace', async () => {
    const { driver, sandbox } = setup();
    const ws = (await sandbox.forSession('s')).cwd;
    mkdirSync(path.join(ws, 'sub'));
    await sandbox.execute({ sessionId: 's', program: 'ls', cwd: path.join(ws, 'sub') });
    expect(driver.requests[0]?.cwd).toBe(path.join(ws, 'sub'));
  });

  const expectCwdRefused = async (
    makeCwd: (ws: string, out: string, sandbox: WorkspaceSandbox) => string,
  ) => {
    const { driver, sandbox } = setup();
    const outside = tempDir('aleph-outside-');
    const ws = (await sandbox.forSession('s')).cwd;
    await sandbox.forSession('other');
    const error = await rejection(
      sandbox.execute({ sessionId: 's', program: 'ls', cwd: makeCwd(ws, outside, sandbox) }),
    );
    expect(error.code).toBe('ALEPH_CAPABILITY_DENIED');
    expect(error.message).toContain('cwd outside workspace root');
    expect(driver.runCount).toBe(0);
  };

  it.each([
    ['a .. escape', (ws: string) => path.join(ws, '..')],
    [
      "another session's workspace",
      (_ws: string, _out: string, sandbox: WorkspaceSandbox) => sandbox.workspacePath('other'),
    ],
  ])('refuses %s with "cwd outside workspace root" and runs nothing', async (_name, makeCwd) => {
    await expectCwdRefused(makeCwd);
  });

  it.skipIf(process.platform === 'win32').each([
    [
      'a symlink out',
      (ws: string, out: string) => {
        symlinkSync(out, path.join(ws, 'link'));
        return path.join(ws, 'link');
      },
    ],
    [
      'a path under a symlinked parent',
      (ws: string, out: string) => {
        mkdirSync(path.join(out, 'deep'));
        symlinkSync(out, path.join(ws, 'parent'));
        return path.join(ws, 'parent', 'deep');
      },
    ],
  ])(
    'refuses %s with "cwd outside workspace root" (needs symlinks: skipped on Windows, where they need privileges)',
    async (_name, makeCwd) => {
      await expectCwdRefused(makeCwd);
    },
  );

  it('rejects a cwd that does not exist, and creates no workspace for it', async () => {
    const { root, sandbox } = setup();
    const cwd = path.join(sandbox.workspacePath('fresh'), 'nope');
    const error = await rejection(sandbox.execute({ sessionId: 'fresh', program: 'ls', cwd }));
    expect(error.code).toBe('ALEPH_INVALID_COMMAND');
    expect(error.message).toMatch(/^command\.cwd does not exist/);
    expect(readdirSync(root)).toEqual([]);
  });

  it('creates nothing on disk for malformed commands', async () => {
    const { root, sandbox } = setup();
    for (const bad of [
      { sessionId: 'x', program: '' },
      { sessionId: 'x', program: 'ls', args: ['\0'] },
      { sessionId: 'x', program: 'ls', cwd: 'relative' },
      { sessionId: 'x', program: 'ls', capabilities: { network: { kind: 'bogus' } } },
      { sessionId: 'x', program: 'ls', capabilities: { maxMemoryMb: -1 } },
    ]) {
      const error = await rejection(sandbox.execute(bad as SandboxCommandInput));
      expect(error.code).toBe('ALEPH_INVALID_COMMAND');
    }
    expect(readdirSync(root)).toEqual([]);
  });
});

describe('WorkspaceSandbox: capability check (every branch of step 3)', () => {
  const net = (hosts: string[]) => ({
    ...strictCapabilities(),
    network: { kind: 'allowHosts' as const, hosts },
  });

  it('baseline: strict commands and workspace paths pass without asking', async () => {
    const { sandbox, requester } = setup();
    const ws = sandbox.workspacePath('s');
    await sandbox.execute({ sessionId: 's', program: 'ls' });
    await sandbox.execute({
      sessionId: 's',
      program: 'ls',
      capabilities: { fsWrite: [path.join(ws, 'out')] },
    });
    expect(requester.requests).toHaveLength(0);
  });

  it('approved: the request runs and is cached for the session', async () => {
    const { sandbox, requester, driver } = setup({
      requester: new FakeApprovalRequester({ outcome: 'approved' }),
    });
    await sandbox.execute({ sessionId: 's', program: 'curl', capabilities: net(['a.com', 'b.com']) });
    expect(requester.requests).toHaveLength(1);
    expect(requester.requests[0]?.reasons).toEqual(['network access to a.com, b.com']);
    // cached grant: the same request again
    await sandbox.execute({ sessionId: 's', program: 'curl', capabilities: net(['a.com', 'b.com']) });
    // narrower than the grant
    await sandbox.execute({ sessionId: 's', program: 'curl', capabilities: net(['a.com']) });
    expect(requester.requests).toHaveLength(1);
    expect(driver.runCount).toBe(3);
    // wider than the grant asks again
    await sandbox.execute({ sessionId: 's', program: 'curl', capabilities: net(['a.com', 'c.com']) });
    expect(requester.requests).toHaveLength(2);
    // grants are per session
    await sandbox.execute({ sessionId: 'other', program: 'curl', capabilities: net(['a.com']) });
    expect(requester.requests).toHaveLength(3);
  });

  it('approved once: runs, but is not cached', async () => {
    const { sandbox, requester } = setup({
      requester: new FakeApprovalRequester({ outcome: 'approved', scope: 'once' }),
    });
    await sandbox.execute({ sessionId: 's', program: 'curl', capabilities: net(['a.com']) });
    await sandbox.execute({ sessionId: 's', program: 'curl', capabilities: net(['a.com']) });
    expect(requester.requests).toHaveLength(2);
  });

  it('denied: CapabilityDenied naming what was asked, nothing runs', async () => {
    const { sandbox, driver } = setup({
      requester: new FakeApprovalRequester({ outcome: 'denied', reason: 'not today' }),
    });
    const error = await rejection(
      sandbox.execute({ sessionId: 's', program: 'sh', capabilities: { spawnSubprocess: true } }),
    );
    expect(error.code).toBe('ALEPH_CAPABILITY_DENIED');
    expect(error.message).toBe(
      'capability denied: approval denied (not today) for permission to spawn subprocesses',
    );
    expect(driver.runCount).toBe(0);
  });

  it('timeout: the gate gives up and the command is denied', async () => {
    const { sandbox, driver } = setup({ requester: new FakeApprovalRequester('hang'), timeoutMs: 30 });
    const error = await rejection(
      sandbox.execute({ sessionId: 's', program: 'cat', capabilities: { fsRead: ['/etc'] } }),
    );
    expect(error.code).toBe('ALEPH_CAPABILITY_DENIED');
    expect(error.message).toMatch(/approval timed out for read access to \/etc/);
    expect(driver.runCount).toBe(0);
  });

  it('concurrent identical elevations ask once', async () => {
    const { sandbox, requester } = setup({ requester: new FakeApprovalRequester({ outcome: 'approved' }) });
    await Promise.all(
      Array.from({ length: 10 }, () =>
        sandbox.execute({ sessionId: 's', program: 'curl', capabilities: net(['x.com']) }),
      ),
    );
    expect(requester.requests).toHaveLength(1);
  });

  it.skipIf(process.platform === 'win32')(
    'a symlink inside an approved root cannot widen a request (paths are resolved first; needs symlinks: skipped on Windows)',
    async () => {
      const { sandbox, requester } = setup({
        requester: new FakeApprovalRequester([{ outcome: 'approved' }, { outcome: 'denied' }]),
      });
      const data = tempDir('aleph-data-');
      const secret = tempDir('aleph-secret-');
      symlinkSync(secret, path.join(data, 'link'));
      await sandbox.execute({ sessionId: 's', program: 'cat', capabilities: { fsRead: [data] } });
      const error = await rejection(
        sandbox.execute({
          sessionId: 's',
          program: 'cat',
          capabilities: { fsRead: [path.join(data, 'link')] },
        }),
      );
      expect(error.code).toBe('ALEPH_CAPABILITY_DENIED');
      expect(requester.requests[1]?.requested.fsRead).toEqual([realpathSync(secret)]);
    },
  );

  it('refuses (fail closed) what the driver did not declare, before asking anyone', async () => {
    const root = tempDir();
    const driver = createFakeDriver({ capabilities: ['fs.confine', 'net.none', 'proc.deny-spawn'] });
    const requester = new FakeApprovalRequester({ outcome: 'approved' });
    const sandbox = new WorkspaceSandbox({
      driver,
      workspaceRoot: root,
      approvalGate: new ApprovalGate({ requester }),
    });
    await sandbox.execute({ sessionId: 's', program: 'ls' });
    const error = await rejection(
      sandbox.execute({
        sessionId: 's',
        program: 'curl',
        capabilities: { network: { kind: 'allowHosts', hosts: ['a.com'] } },
      }),
    );
    expect(error.code).toBe('ALEPH_CAPABILITY_UNSUPPORTED');
    expect(error.message).toMatch(/cannot enforce net\.allowlist/);
    expect(requester.requests).toHaveLength(0);
  });

  it("appends the driver's own explanation of what it cannot enforce", async () => {
    const driver = {
      ...createFakeDriver({ capabilities: ['fs.confine', 'net.none', 'proc.deny-spawn'] }),
      explainUnsupported: async (_caps: unknown, missing: readonly string[]) =>
        `missing here: ${missing.join('+')}`,
    };
    const sandbox = new WorkspaceSandbox({ driver, workspaceRoot: tempDir() });
    const error = await rejection(
      sandbox.execute({ sessionId: 's', program: 'curl', capabilities: { network: { kind: 'allowAll' } } }),
    );
    expect(error.message).toMatch(/cannot enforce net\.all; refusing .*\. missing here: net\.all$/);
  });
});

describe('WorkspaceSandbox: hooks, run, audit', () => {
  it('a denying hook stops the command before the workspace exists', async () => {
    const root = tempDir();
    const driver = createFakeDriver();
    const sandbox = new WorkspaceSandbox({
      driver,
      workspaceRoot: root,
      hooks: [
        {
          name: 'command-policy',
          before: () => ({ action: 'deny', reason: 'fork bomb', rules: ['fork-bomb'] }),
        },
      ],
    });
    const error = await rejection(
      sandbox.execute({ sessionId: 's', program: 'sh', args: ['-c', ':(){ :|:& };:'] }),
    );
    expect(error.code).toBe('ALEPH_POLICY_DENIED');
    expect(error.details.rules).toEqual(['fork-bomb']);
    expect(readdirSync(root)).toEqual([]);
    expect(driver.runCount).toBe(0);
  });

  it('the rate limit hook denies with ALEPH_RATE_LIMITED', async () => {
    const root = tempDir();
    const sandbox = new WorkspaceSandbox({
      driver: createFakeDriver(),
      workspaceRoot: root,
      hooks: new HookChain([new RateLimitHook({ capacity: 1, refillPerSecond: 0 })]),
    });
    await sandbox.execute({ sessionId: 's', program: 'ls' });
    expect((await rejection(sandbox.execute({ sessionId: 's', program: 'ls' }))).code).toBe(
      'ALEPH_RATE_LIMITED',
    );
  });

  it('timeout precedence: command > capabilities.timeoutSecs > default', async () => {
    const { sandbox, driver } = setup();
    const short = sandbox.withTimeout(5000);
    await short.execute({ sessionId: 's', program: 'a' });
    await short.execute({ sessionId: 's', program: 'b', capabilities: { timeoutSecs: 2 } });
    await short.execute({ sessionId: 's', program: 'c', capabilities: { timeoutSecs: 2 }, timeout: 750 });
    await sandbox.execute({ sessionId: 's', program: 'd' });
    expect(driver.requests.map((r) => r.timeoutMs)).toEqual([5000, 2000, 750, 60_000]);
  });

  it('passes the output budget (default 1 MiB, overridable) to the driver', async () => {
    const { sandbox, driver } = setup();
    await sandbox.execute({ sessionId: 's', program: 'a' });
    await sandbox.withMaxOutputBytes(4096).execute({ sessionId: 's', program: 'b' });
    expect(driver.requests.map((r) => r.maxOutputBytes)).toEqual([1024 * 1024, 4096]);
  });

  it('emits exactly one ledger record per execute, denials and driver failures included', async () => {
    const records = recordLedger();
    const root = tempDir();
    let fail = false;
    const driver = createFakeDriver({
      output: () => {
        if (fail) throw new Error('bwrap exploded');
        return { exitCode: 3 };
      },
    });
    const sandbox = new WorkspaceSandbox({ driver, workspaceRoot: root });
    await sandbox.execute({ sessionId: 's', program: 'ok', args: ['x'] });
    await rejection(sandbox.execute({ sessionId: 's', program: '' }));
    await rejection(
      sandbox.execute({ sessionId: 's', program: 'curl', capabilities: { network: { kind: 'allowAll' } } }),
    );
    fail = true;
    const failure = await rejection(sandbox.execute({ sessionId: 's', program: 'boom' }));
    expect(failure.code).toBe('ALEPH_DRIVER_FAILED');
    expect(records.map((r) => [r.program, r.outcome, r.decision, r.denial?.code ?? null])).toEqual([
      ['ok', 'completed', 'baseline', null],
      ['', 'denied', 'not-checked', 'ALEPH_INVALID_COMMAND'],
      ['curl', 'denied', 'denied', 'ALEPH_CAPABILITY_DENIED'],
      ['boom', 'error', 'baseline', 'ALEPH_DRIVER_FAILED'],
    ]);
    expect(records[0]).toMatchObject({ sessionId: 's', args: ['x'], exitCode: 3, driver: 'fake' });
  });

  it('an AbortSignal that fired rejects with ALEPH_ABORTED', async () => {
    const { sandbox, driver } = setup();
    const controller = new AbortController();
    controller.abort();
    const error = await rejection(
      sandbox.execute({ sessionId: 's', program: 'ls' }, { signal: controller.signal }),
    );
    expect(error.code).toBe('ALEPH_ABORTED');
    expect(driver.runCount).toBe(0);
  });

  it('after dispose, execute is a clear error and the driver is disposed', async () => {
    const { sandbox, driver } = setup();
    await sandbox.dispose();
    await sandbox.dispose();
    expect(driver.disposed).toBe(true);
    const error = await rejection(sandbox.execute({ sessionId: 's', program: 'ls' }));
    expect(error.code).toBe('ALEPH_DISPOSED');
  });

  it('rejects a relative workspaceRoot at construction', () => {
    expect(() => new WorkspaceSandbox({ driver: createFakeDriver(), workspaceRoot: 'rel' })).toThrow(
      /workspaceRoot is not absolute/,
    );
  });
});
