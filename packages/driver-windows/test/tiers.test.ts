import { existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  ApprovalGate,
  isAlephError,
  normalizeCapabilities,
  type SandboxCapabilities,
  type SandboxOutput,
  strictCapabilities,
  WorkspaceSandbox,
} from '@aleph/sandbox-core';
import { afterEach, describe, expect, it } from 'vitest';
import {
  ACCESS,
  createWindowsDriver,
  E_ALREADY_EXISTS,
  ERROR_ACCESS_DENIED,
  ERROR_PRIVILEGE_NOT_HELD,
  type WindowsDriverOptions,
} from '../src/index.js';
import { type FakeProgram, FakeWin32 } from './fake-win32.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
const tmp = () => {
  const d = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'aleph-win-tier-')));
  dirs.push(d);
  return d;
};
const caps = (c: Partial<SandboxCapabilities> = {}) =>
  normalizeCapabilities({ ...strictCapabilities(), ...c });

async function run(
  fake: FakeWin32,
  program: FakeProgram,
  c: SandboxCapabilities = caps(),
  extra: {
    options?: Partial<WindowsDriverOptions>;
    stdin?: string;
    timeoutMs?: number;
    signal?: AbortSignal;
    maxOutputBytes?: number;
    env?: Record<string, string>;
  } = {},
): Promise<{ out?: SandboxOutput; error?: unknown; ws: string }> {
  fake.program = program;
  const driver = createWindowsDriver({ win32: fake, platform: 'win32', ...extra.options });
  const ws = tmp();
  const profile = await driver.profileFor(c, ws, { sessionId: 's', workspace: ws });
  try {
    const out = await driver.run({
      runId: 'r000000000000-00000000',
      sessionId: 's',
      workspace: ws,
      program: 'tool.exe',
      args: ['--flag', 'two words'],
      env: extra.env ?? { EXTRA: '1' },
      cwd: ws,
      capabilities: c,
      profile,
      timeoutMs: extra.timeoutMs ?? 5000,
      maxOutputBytes: extra.maxOutputBytes ?? 1024 * 1024,
      ...(extra.stdin === undefined ? {} : { stdin: extra.stdin }),
      ...(extra.signal === undefined ? {} : { signal: extra.signal }),
    });
    return { out, ws };
  } catch (error) {
    return { error, ws };
  }
}

/** Nothing may be left behind by any run, on any path. */
function expectClean(fake: FakeWin32) {
  expect(fake.openHandles()).toEqual([]);
  expect([...fake.profiles]).toEqual([]);
  expect([...fake.aces.keys()]).toEqual([]);
  expect([...fake.labels.keys()]).toEqual([]);
}

describe('tier 1: AppContainer', () => {
  it('runs the command, returns its output and exit code, and undoes everything', async () => {
    const fake = new FakeWin32();
    const { out, error } = await run(fake, { stdout: 'hello\n', stderr: 'warn\n', exitCode: 3 });
    expect(error).toBeUndefined();
    expect(out?.stdoutText).toBe('hello\n');
    expect(out?.stderrText).toBe('warn\n');
    expect(out?.exitCode).toBe(3);
    expect(out?.details).toMatchObject({ driver: 'windows', tier: 'appcontainer', notEnforced: [] });
    expectClean(fake);
  });

  it('job first, process suspended, assigned, then resumed; ACEs granted and denied before the process exists', async () => {
    const fake = new FakeWin32();
    await run(fake, {});
    const order = (name: string) => fake.calls.findIndex((c) => c.startsWith(name));
    expect(order('CreateJobObjectW')).toBeLessThan(order('CreateProcess'));
    expect(order('SetInformationJobObject(limits)')).toBeLessThan(order('CreateProcess'));
    expect(order('SetInformationJobObject(ui)')).toBeLessThan(order('CreateProcess'));
    expect(order('applyAces')).toBeLessThan(order('CreateProcess'));
    expect(order('CreateProcess')).toBeLessThan(order('AssignProcessToJobObject'));
    expect(order('AssignProcessToJobObject')).toBeLessThan(order('ResumeThread'));
    expect(fake.calls).toContain('CreateProcess(appcontainer)');
    // .git .aleph .codex .agents, and the workspace itself (they cannot be renamed away through it)
    expect(fake.calls.filter((c) => c.startsWith('applyAces') && c.includes('deny:')).length).toBe(5);
    const job = [...fake.jobs.values()][0];
    expect(job?.limits).toMatchObject({
      activeProcessLimit: 1,
      killOnJobClose: true,
      dieOnUnhandledException: true,
    });
    expect(job?.ui).toBe(0xff);
  });

  it('network allowAll asks for the two network capabilities; none for none', async () => {
    const fake = new FakeWin32();
    await run(fake, {}, caps({ network: { kind: 'allowAll' } }));
    expect(fake.calls.find((c) => c.startsWith('CreateAppContainerProfile'))).toMatch(
      /\[S-1-15-3-1 S-1-15-3-3\]/,
    );
    const none = new FakeWin32();
    await run(none, {});
    expect(none.calls.find((c) => c.startsWith('CreateAppContainerProfile'))).toMatch(/\[\]/);
  });

  it('a profile name already in use is reused through its derived SID', async () => {
    const fake = new FakeWin32().fail('CreateAppContainerProfile', E_ALREADY_EXISTS, false);
    const { out } = await run(fake, { stdout: 'ok' });
    expect(out?.details).toMatchObject({ tier: 'appcontainer' });
    expect(fake.calls.some((c) => c.startsWith('DeriveAppContainerSidFromAppContainerName'))).toBe(true);
    expectClean(fake);
  });

  it('creates stub directories for missing protected paths and denies them', async () => {
    const fake = new FakeWin32();
    const { ws } = await run(fake, {});
    for (const d of ['.git', '.aleph', '.codex', '.agents']) expect(existsSync(path.join(ws, d))).toBe(true);
  });
});

describe('degrading', () => {
  it.each([
    ['CreateAppContainerProfile', ERROR_ACCESS_DENIED],
    ['applyAces', ERROR_ACCESS_DENIED],
    ['CreateProcess', ERROR_ACCESS_DENIED],
  ])('a tier-1 failure in %s falls to tier 2, undone first, and says why', async (fn, code) => {
    const fake = new FakeWin32().fail(fn, code, false);
    const { out, error } = await run(fake, { stdout: 'ran' });
    expect(error).toBeUndefined();
    expect(out?.stdoutText).toBe('ran');
    expect(out?.details).toMatchObject({ tier: 'restricted' });
    const details = out?.details as { degraded: string[]; notEnforced: string[] };
    expect(details.degraded[0]).toMatch(
      new RegExp(
        `^appcontainer: ${fn === 'CreateProcess' ? 'CreateProcess' : fn} failed with ERROR_ACCESS_DENIED`,
      ),
    );
    expect(details.notEnforced.join('\n')).toMatch(/reads are not confined[\s\S]*network is open/);
    expect(fake.calls).toContain('CreateProcess(restricted)');
    expect(fake.calls.some((c) => c === 'SetTokenInformation(S-1-16-4096)')).toBe(true);
    expect(fake.calls.some((c) => /setIntegrityLabel\(.*, low\)/.test(c))).toBe(true);
    expect(fake.calls.some((c) => /setIntegrityLabel\(.*\.git, medium\)/.test(c))).toBe(true);
    expectClean(fake);
  });

  it('tier 2 without the privilege falls to the host token, and says what is no longer enforced', async () => {
    const fake = new FakeWin32()
      .fail('CreateAppContainerProfile', ERROR_ACCESS_DENIED)
      .fail('CreateRestrictedToken', ERROR_PRIVILEGE_NOT_HELD);
    const { out } = await run(fake, { stdout: 'host' });
    expect(out?.details).toMatchObject({ tier: 'host' });
    const details = out?.details as { degraded: string[]; notEnforced: string[] };
    expect(details.degraded).toHaveLength(2);
    expect(details.degraded[1]).toMatch(
      /^restricted: CreateRestrictedToken failed with ERROR_PRIVILEGE_NOT_HELD/,
    );
    expect(details.notEnforced.join('\n')).toMatch(/host token writes/);
    expect(fake.calls).toContain('CreateProcess(host)');
    expectClean(fake);
  });

  it('any other tier-2 failure stops: nothing runs, nothing is left', async () => {
    const fake = new FakeWin32()
      .fail('CreateAppContainerProfile', ERROR_ACCESS_DENIED)
      .fail('SetTokenInformation', ERROR_ACCESS_DENIED);
    const { error } = await run(fake, {});
    expect(isAlephError(error) && error.code).toBe('ALEPH_DRIVER_FAILED');
    expect(String((error as Error).message)).toMatch(
      /appcontainer: .*; restricted: SetTokenInformation failed/,
    );
    expect(fake.calls.some((c) => c.startsWith('CreateProcess'))).toBe(false);
    expectClean(fake);
  });

  it('requireAppContainer: a tier-1 failure is an error, never a weaker tier', async () => {
    const fake = new FakeWin32().fail('CreateAppContainerProfile', ERROR_ACCESS_DENIED);
    const { error } = await run(fake, {}, caps(), { options: { requireAppContainer: true } });
    expect(isAlephError(error) && error.code).toBe('ALEPH_DRIVER_FAILED');
    expect(fake.calls.some((c) => c.startsWith('OpenProcessToken') || c.startsWith('CreateProcess'))).toBe(
      false,
    );
    expectClean(fake);
  });

  it('a program that does not exist is an error at once, not a reason to try weaker tiers', async () => {
    const fake = new FakeWin32().fail('CreateProcess', 2);
    const { error } = await run(fake, {});
    expect(isAlephError(error) && error.code).toBe('ALEPH_DRIVER_FAILED');
    expect(String((error as Error).message)).toMatch(
      /could not run tool\.exe: .*appcontainer: CreateProcess failed with error 2/,
    );
    expect(fake.calls.some((c) => c.startsWith('OpenProcessToken'))).toBe(false);
    expectClean(fake);
  });

  it('an old build without AppContainers starts at tier 2', async () => {
    const fake = new FakeWin32();
    fake.build = 7601;
    const { out } = await run(fake, {});
    expect(out?.details).toMatchObject({ tier: 'restricted' });
    expect(fake.calls.some((c) => c.startsWith('CreateAppContainerProfile'))).toBe(false);
  });
});

describe('the job', () => {
  it('a job that cannot be set up means nothing runs', async () => {
    const fake = new FakeWin32().fail('SetInformationJobObject', ERROR_ACCESS_DENIED);
    const { error } = await run(fake, {});
    expect(isAlephError(error) && error.code).toBe('ALEPH_DRIVER_FAILED');
    expect(fake.calls.some((c) => c.startsWith('CreateProcess'))).toBe(false);
    expectClean(fake);
  });

  it('a process that cannot join the job is terminated before it ever resumes', async () => {
    const fake = new FakeWin32().fail('AssignProcessToJobObject', ERROR_ACCESS_DENIED);
    const { error } = await run(fake, { stdout: 'must not run' });
    expect(isAlephError(error) && error.code).toBe('ALEPH_DRIVER_FAILED');
    expect(fake.calls).toContain('TerminateProcess(1)');
    expect(fake.calls).not.toContain('ResumeThread');
    expectClean(fake);
  });

  it('a timeout terminates the job: timedOut, no exit code', async () => {
    const fake = new FakeWin32();
    const { out } = await run(fake, { runMs: Number.POSITIVE_INFINITY }, caps(), { timeoutMs: 50 });
    expect(out?.timedOut).toBe(true);
    expect(out?.exitCode).toBeNull();
    expect(out?.details).toMatchObject({ killedBy: 'timeout' });
    expect(fake.calls).toContain('TerminateJobObject(1)');
    expectClean(fake);
  });

  it('an abort terminates the job', async () => {
    const fake = new FakeWin32();
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 30);
    const { out } = await run(fake, { runMs: Number.POSITIVE_INFINITY }, caps(), {
      signal: controller.signal,
    });
    expect(out?.details).toMatchObject({ killedBy: 'abort' });
    expect(out?.timedOut).toBe(false);
    expectClean(fake);
  });

  it('spawnSubprocess and maxMemoryMb reach the job limits', async () => {
    const fake = new FakeWin32();
    await run(fake, {}, caps({ spawnSubprocess: true, maxMemoryMb: 64 }), { options: { maxProcesses: 12 } });
    expect([...fake.jobs.values()][0]?.limits).toMatchObject({
      activeProcessLimit: 12,
      processMemoryLimit: 64 * 1024 * 1024,
    });
  });
});

describe('stdio', () => {
  it('stdin reaches the command through its pipe', async () => {
    const fake = new FakeWin32();
    const { out } = await run(fake, { echoStdin: true }, caps(), { stdin: 'line one\nline two\n' });
    expect(out?.stdoutText).toBe('line one\nline two\n');
    expect(fake.calls).not.toContain('CreateFileW(NUL)');
  });

  it('without stdin the command reads NUL', async () => {
    const fake = new FakeWin32();
    await run(fake, {});
    expect(fake.calls).toContain('CreateFileW(NUL)');
  });

  it('output past the budget is cut and reported, per stream', async () => {
    const fake = new FakeWin32();
    const { out } = await run(fake, { stdout: 'x'.repeat(100), stderr: 'y'.repeat(100) }, caps(), {
      maxOutputBytes: 20,
    });
    expect(out?.stdoutText).toBe('x'.repeat(10));
    expect(out?.stderrText).toBe('y'.repeat(10));
    expect(out?.stdoutTruncated).toBe(true);
    expect(out?.stderrTruncated).toBe(true);
  });

  it('the command line is quoted for CommandLineToArgvW and the environment scrubbed', async () => {
    const fake = new FakeWin32();
    process.env.ALEPH_SECRET_FOR_TEST = 'leak';
    try {
      await run(fake, {});
    } finally {
      delete process.env.ALEPH_SECRET_FOR_TEST;
    }
    const request = [...fake.processes.values()][0]?.request;
    expect(request?.commandLine).toBe('tool.exe --flag "two words"');
    expect(request?.environment).toMatchObject({ EXTRA: '1' });
    expect(Object.keys(request?.environment ?? {})).not.toContain('ALEPH_SECRET_FOR_TEST');
  });
});

describe('the home list, ~/.aleph, the vault and the audit log', () => {
  const setup = () => {
    const base = tmp();
    const home = path.join(base, 'Users', 'dev');
    const aleph = path.join(home, '.aleph');
    mkdirSync(path.join(aleph, 'data'), { recursive: true });
    mkdirSync(path.join(home, '.ssh'));
    const audit = path.join(home, 'audit.jsonl');
    const options: Partial<WindowsDriverOptions> = {
      homes: [home],
      homeProtectedPaths: ['.ssh', '.bashrc', '.config/git'],
      alephDir: aleph,
      vaultPaths: [path.join(aleph, 'data')],
      auditLogPath: audit,
    };
    return { base, home, aleph, audit, options };
  };

  it('tier 1 under a write grant of C:\\Users: DENY write on the home list and ~/.aleph, DENY all on the vault and audit log, DENY move on the home; all revoked after', async () => {
    const h = setup();
    const fake = new FakeWin32();
    const seen: { path: string; mode: string; access: number; inherit: boolean }[] = [];
    const apply = fake.applyAces.bind(fake);
    fake.applyAces = (p, entries) => {
      for (const e of entries) seen.push({ path: p, mode: e.mode, access: e.access, inherit: e.inherit });
      apply(p, entries);
    };
    const { out } = await run(fake, { stdout: 'ok' }, caps({ fsWrite: [path.join(h.base, 'Users')] }), {
      options: h.options,
    });
    expect(out?.details).toMatchObject({ tier: 'appcontainer' });
    const denied = (p: string) => seen.find((e) => e.path === p && e.mode === 'deny');
    for (const p of [
      path.join(h.home, '.ssh'),
      path.join(h.home, '.bashrc'),
      path.join(h.home, '.config', 'git'),
      h.aleph,
    ])
      expect(denied(p), p).toMatchObject({ access: ACCESS.denyWrite, inherit: true });
    for (const p of [path.join(h.aleph, 'data'), h.audit])
      expect(denied(p), p).toMatchObject({ access: ACCESS.denyAll, inherit: true });
    expect(denied(h.home)).toMatchObject({ access: ACCESS.denyMove, inherit: false });
    // Missing entries were created so they carry the ACE: a directory, or an empty file.
    expect(statSync(path.join(h.home, '.config', 'git')).isDirectory()).toBe(true);
    expect(statSync(path.join(h.home, '.bashrc')).isFile()).toBe(true);
    expect(statSync(h.audit).size).toBe(0);
    expectClean(fake);
  });

  it('tier 2 keeps them at medium integrity, so the low-integrity command cannot write them', async () => {
    const h = setup();
    const fake = new FakeWin32().fail('CreateAppContainerProfile', ERROR_ACCESS_DENIED);
    const { out } = await run(fake, {}, caps({ fsWrite: [h.home] }), { options: h.options });
    expect(out?.details).toMatchObject({ tier: 'restricted' });
    for (const p of [path.join(h.home, '.ssh'), path.join(h.home, '.bashrc'), h.aleph, h.audit])
      expect(fake.calls, p).toContain(`setIntegrityLabel(${p}, medium)`);
    expect(String(out?.details?.notEnforced)).toMatch(/vault and the audit log/);
    expectClean(fake);
  });
});

describe('loader variables', () => {
  it('LD_* and the .NET profiler/startup-hook variables are refused before anything runs, naming the variable and the fix', async () => {
    for (const name of [
      'LD_PRELOAD',
      'cor_enable_profiling',
      'CORECLR_PROFILER_PATH_64',
      'DOTNET_STARTUP_HOOKS',
    ]) {
      const fake = new FakeWin32();
      const { error } = await run(fake, { stdout: 'ran' }, caps(), { env: { [name]: 'C:\\ws\\x.dll' } });
      expect(isAlephError(error) && error.code).toBe('ALEPH_INVALID_COMMAND');
      expect((error as Error).message).toContain(`env.${name}`);
      expect((error as Error).message).toContain(`Windows driver option allowLoaderEnv: ['${name}']`);
      expect(fake.calls.filter((c) => c.startsWith('CreateProcess'))).toEqual([]);
      expectClean(fake);
    }
  });

  it('a variable listed in allowLoaderEnv (any case) reaches the command', async () => {
    const fake = new FakeWin32();
    const { out } = await run(fake, { stdout: 'ran' }, caps(), {
      env: { LD_LIBRARY_PATH: 'C:\\ws' },
      options: { allowLoaderEnv: ['ld_library_path'] },
    });
    expect(out?.exitCode).toBe(0);
    expect([...fake.processes.values()][0]?.request.environment).toMatchObject({ LD_LIBRARY_PATH: 'C:\\ws' });
  });
});

describe('off Windows and in the pipeline', () => {
  it('without a Win32 binding off Windows: ALEPH_DRIVER_UNAVAILABLE, saying why', async () => {
    const driver = createWindowsDriver({ platform: 'linux' });
    const probe = await driver.probe();
    expect(probe.available).toBe(false);
    expect(probe.problems.join('\n')).toMatch(/not Windows/);
    const ws = tmp();
    const profile = await driver.profileFor(caps(), ws, { sessionId: 's', workspace: ws });
    const error = await driver
      .run({
        runId: 'r000000000000-00000000',
        sessionId: 's',
        workspace: ws,
        program: 'x',
        args: [],
        env: {},
        cwd: ws,
        capabilities: caps(),
        profile,
        timeoutMs: 1000,
        maxOutputBytes: 10,
      })
      .catch((e: unknown) => e);
    expect(isAlephError(error) && error.code).toBe('ALEPH_DRIVER_UNAVAILABLE');
  });

  it('allowHosts is refused before anything runs, listing the addresses it would need', async () => {
    const fake = new FakeWin32();
    const driver = createWindowsDriver({
      win32: fake,
      platform: 'win32',
      resolver: async () => ['203.0.113.7'],
    });
    const root = tmp();
    mkdirSync(path.join(root, 'ws'));
    const sandbox = new WorkspaceSandbox({
      driver,
      workspaceRoot: path.join(root, 'ws'),
      approvalGate: new ApprovalGate({
        requester: { requestApproval: async () => ({ outcome: 'approved' }) },
      }),
    });
    const error = await sandbox
      .execute({
        sessionId: 's',
        program: 'curl.exe',
        capabilities: { network: { kind: 'allowHosts', hosts: ['pypi.org'] } },
      })
      .catch((e: unknown) => e);
    expect(isAlephError(error) && error.code).toBe('ALEPH_CAPABILITY_UNSUPPORTED');
    expect(String((error as Error).message)).toMatch(/pypi\.org → 203\.0\.113\.7.*none, or allowAll/);
    expect(fake.calls).toEqual([]);
  });
});
