import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import path from 'node:path';
import {
  DRIVER_CAPABILITY_IDS,
  type DriverCapabilityId,
  isAlephError,
  type OsSandboxDriver,
  parseCapabilities,
  requiredDriverCapabilities,
  type SandboxCapabilitiesInput,
  type SandboxCommandInput,
  type SandboxOutput,
  strictCapabilities,
  type WorkspaceSandbox,
} from '@aleph/sandbox-core';

/** What a case gets: a fresh driver wrapped in a fresh `WorkspaceSandbox`, and scratch space. */
export interface ConformanceContext {
  readonly driver: OsSandboxDriver;
  /** A pipeline over `driver`, with an approval requester that approves everything. */
  readonly sandbox: WorkspaceSandbox;
  readonly workspaceRoot: string;
  /** A scratch directory outside every workspace (for escape targets). */
  readonly outside: string;
  /** Runs a command in session `conformance` (or `command.sessionId`). */
  run(command: Omit<SandboxCommandInput, 'sessionId'> & { sessionId?: string }): Promise<SandboxOutput>;
  /** The workspace directory of a session, created if needed. */
  workspaceOf(sessionId?: string): Promise<string>;
}

/**
 * One conformance case, as data: an id, what it needs the driver to declare, and a check that throws on
 * failure. Any test runner can execute it (see `@aleph/driver-conformance/vitest`).
 */
export interface ConformanceCase {
  /** Dotted, stable id: `group.name`. */
  readonly id: string;
  readonly title: string;
  /**
   * Declared driver capabilities the case needs; it is skipped (with the reason) otherwise. For a case
   * that runs commands: `exec` plus what `requiredDriverCapabilities` derives from each command's
   * capabilities (see {@link requirementsOf}); the strict baseline alone needs `fs.confine`, `net.none`
   * and `proc.deny-spawn`.
   */
  readonly requires: readonly DriverCapabilityId[];
  /** Platforms the case's commands exist on. Default: every POSIX platform. */
  readonly platforms?: readonly NodeJS.Platform[];
  check(context: ConformanceContext): Promise<void>;
}

/** Where a case runs when it does not say: every POSIX platform. */
export const POSIX_PLATFORMS: readonly NodeJS.Platform[] = ['linux', 'darwin', 'freebsd', 'openbsd'];

/**
 * What a case that runs commands with these capabilities needs the driver to declare: `exec`, plus the
 * union of `requiredDriverCapabilities` of each command's capabilities (a command that gives none runs
 * on the strict baseline). Paths only matter by presence, so placeholders do.
 *
 * @example
 * ```ts
 * requirementsOf(undefined) // ['exec', 'fs.confine', 'net.none', 'proc.deny-spawn']
 * ```
 */
export function requirementsOf(...commands: (SandboxCapabilitiesInput | undefined)[]): DriverCapabilityId[] {
  const out = new Set<DriverCapabilityId>(['exec']);
  for (const caps of commands) {
    for (const id of requiredDriverCapabilities(parseCapabilities(caps ?? {}, 'case capabilities')))
      out.add(id);
  }
  return [...out];
}

/** Capabilities of the process-behaviour cases' shell scripts (see `sh`). */
const SH_CAPS = { spawnSubprocess: true } as const;

/**
 * A shell script. Process-behaviour cases allow subprocesses: a shell forks for every command but the
 * last, and those cases are about exit codes and streams, not about spawn denial.
 */
const sh = (script: string) => ({
  program: '/bin/sh',
  args: ['-c', script],
  capabilities: SH_CAPS,
});

async function rejection(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (e) {
    return e;
  }
  return undefined;
}

/** A TCP listener on host loopback that records whether anyone connected. */
async function loopbackListener(): Promise<{
  port: number;
  connections: () => number;
  close: () => Promise<void>;
}> {
  let count = 0;
  const server = createServer((socket) => {
    count++;
    socket.end('hello from the host\n');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  return {
    port: address.port,
    connections: () => count,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/**
 * The command cases: the `contract` group needs nothing; the rest need a driver that runs programs. The
 * whole suite (with the session cases) is `conformanceCases`.
 */
export const commandConformanceCases: readonly ConformanceCase[] = [
  // ── contract ───────────────────────────────────────────────────────────────────────────────
  {
    id: 'contract.name',
    title: 'has a non-empty name',
    requires: [],
    async check({ driver }) {
      assert.equal(typeof driver.name, 'string');
      assert.ok(driver.name.length > 0, 'driver.name is empty');
    },
  },
  {
    id: 'contract.capabilities',
    title: 'declares only known capability ids, without duplicates, including fs.confine',
    requires: [],
    async check({ driver }) {
      const known = new Set<string>(DRIVER_CAPABILITY_IDS);
      for (const id of driver.capabilities) assert.ok(known.has(id), `unknown capability id ${id}`);
      assert.equal(new Set(driver.capabilities).size, driver.capabilities.length, 'duplicate capability ids');
      assert.ok(driver.capabilities.includes('fs.confine'), 'every command needs fs.confine');
    },
  },
  {
    id: 'contract.probe',
    title: 'probe() describes the host: driver, availability, tier, mechanisms, problems',
    requires: [],
    async check({ driver }) {
      const probe = await driver.probe();
      assert.equal(probe.driver, driver.name);
      assert.equal(typeof probe.available, 'boolean');
      assert.equal(typeof probe.tier, 'string');
      assert.ok(Array.isArray(probe.problems));
      for (const [name, m] of Object.entries(probe.mechanisms)) {
        assert.equal(typeof m.available, 'boolean', `mechanism ${name}.available`);
        assert.equal(typeof m.detail, 'string', `mechanism ${name}.detail`);
      }
      if (!probe.available) assert.ok(probe.problems.length > 0, 'an unavailable driver must say why');
      JSON.stringify(probe);
    },
  },
  {
    id: 'contract.profile',
    title: 'profileFor() returns a deterministic, JSON-serialisable profile naming the driver',
    requires: [],
    async check({ driver, workspaceOf }) {
      const ws = await workspaceOf();
      const caps = strictCapabilities();
      const a = await driver.profileFor(caps, ws, { sessionId: 'conformance', workspace: ws });
      const b = await driver.profileFor(caps, ws, { sessionId: 'conformance', workspace: ws });
      assert.equal(a.driver, driver.name);
      assert.ok(Array.isArray(a.summary) && a.summary.every((l) => typeof l === 'string'));
      assert.deepEqual(JSON.parse(JSON.stringify(a)), JSON.parse(JSON.stringify(b)));
    },
  },
  {
    id: 'contract.output',
    title:
      'run() resolves with a complete SandboxOutput, or rejects with ALEPH_DRIVER_UNAVAILABLE where it cannot run',
    // Its command runs on the strict baseline.
    requires: requiredDriverCapabilities(strictCapabilities()),
    async check({ run, driver }) {
      const exit0 =
        process.platform === 'win32'
          ? { program: 'cmd.exe', args: ['/d', '/c', 'exit 0'] }
          : { program: '/bin/sh', args: ['-c', 'exit 0'] };
      if (!(await driver.probe()).available) {
        const error = await rejection(run(exit0));
        assert.ok(isAlephError(error), `expected an AlephError, got ${String(error)}`);
        assert.equal(error.code, 'ALEPH_DRIVER_UNAVAILABLE');
        return;
      }
      const out = await run(exit0);
      assert.ok(out.exitCode === null || Number.isInteger(out.exitCode));
      assert.ok(out.stdout instanceof Uint8Array && out.stderr instanceof Uint8Array);
      assert.equal(typeof out.stdoutText, 'string');
      for (const k of ['stdoutTruncated', 'stderrTruncated', 'timedOut'] as const)
        assert.equal(typeof out[k], 'boolean');
      assert.ok(Number.isFinite(out.durationMs) && out.durationMs >= 0);
      const json = out.toJSON();
      assert.equal(json.exitCode, out.exitCode);
    },
  },
  {
    id: 'contract.dispose',
    title: 'dispose() can be called twice',
    requires: [],
    async check({ driver }) {
      await driver.dispose?.();
      await driver.dispose?.();
    },
  },

  // ── process behaviour ──────────────────────────────────────────────────────────────────────
  {
    id: 'process.exit-code',
    title: 'propagates the exit code',
    requires: requirementsOf(SH_CAPS),
    async check({ run }) {
      assert.equal((await run(sh('exit 7'))).exitCode, 7);
      assert.equal((await run(sh('exit 0'))).exitCode, 0);
    },
  },
  {
    id: 'process.streams',
    title: 'keeps stdout and stderr apart',
    requires: requirementsOf(SH_CAPS),
    async check({ run }) {
      const out = await run(sh('echo to-out; echo to-err >&2'));
      assert.equal(out.stdoutText, 'to-out\n');
      assert.equal(out.stderrText, 'to-err\n');
    },
  },
  {
    id: 'process.stdin',
    title: 'delivers stdin and closes it',
    requires: requirementsOf(SH_CAPS),
    async check({ run }) {
      const out = await run({ ...sh('cat; echo " [eof]"'), stdin: 'from stdin' });
      assert.equal(out.stdoutText, 'from stdin [eof]\n');
    },
  },
  {
    id: 'process.env',
    title: "passes the command's env and none of the host's secrets",
    requires: requirementsOf(SH_CAPS),
    async check({ run }) {
      process.env.ALEPH_CONFORMANCE_HOST_SECRET = 'host-secret-value';
      try {
        const out = await run({ ...sh('env'), env: { GREETING: 'hi there' } });
        assert.match(out.stdoutText, /^GREETING=hi there$/m);
        assert.doesNotMatch(out.stdoutText, /host-secret-value/);
      } finally {
        delete process.env.ALEPH_CONFORMANCE_HOST_SECRET;
      }
    },
  },
  {
    id: 'process.cwd',
    title: 'runs in the requested cwd inside the workspace',
    requires: requirementsOf(SH_CAPS),
    async check({ run, workspaceOf }) {
      const ws = await workspaceOf();
      mkdirSync(path.join(ws, 'sub'), { recursive: true });
      const out = await run({ ...sh('pwd -P'), cwd: path.join(ws, 'sub') });
      assert.equal(out.stdoutText.trim(), path.join(ws, 'sub'));
    },
  },
  {
    id: 'process.persistence',
    title: "a session's files persist between executions",
    requires: requirementsOf(SH_CAPS),
    async check({ run }) {
      assert.equal((await run(sh('echo kept > note.txt'))).exitCode, 0);
      assert.equal((await run(sh('cat note.txt'))).stdoutText, 'kept\n');
    },
  },
  {
    id: 'process.timeout',
    title: 'a timeout ends the run and reports timedOut',
    requires: requirementsOf(SH_CAPS),
    async check({ run }) {
      const out = await run({ ...sh('sleep 30'), timeout: 300 });
      assert.equal(out.timedOut, true);
      assert.ok(out.durationMs < 10_000, `took ${out.durationMs} ms`);
    },
  },
  {
    id: 'process.output-budget',
    title: 'truncates output at the budget and reports it',
    requires: requirementsOf(SH_CAPS),
    async check({ sandbox }) {
      const out = await sandbox
        .withMaxOutputBytes(64 * 1024)
        .execute({ sessionId: 'conformance', ...sh('head -c 3000000 /dev/zero | tr "\\0" y') });
      assert.equal(out.stdoutTruncated, true);
      assert.equal(out.stdout.byteLength, 32 * 1024);
      assert.equal(out.exitCode, 0);
    },
  },
  {
    id: 'process.signal',
    title: 'reports a terminating signal',
    requires: requirementsOf(SH_CAPS),
    async check({ run }) {
      const out = await run(sh('kill -KILL $$'));
      assert.equal(out.signal, 'SIGKILL');
      assert.equal(out.exitCode, null);
    },
  },
  {
    id: 'process.abort',
    title: 'an AbortSignal ends the run with ALEPH_ABORTED',
    requires: requirementsOf(SH_CAPS),
    async check({ sandbox }) {
      const controller = new AbortController();
      setTimeout(() => controller.abort(), 200);
      const started = Date.now();
      const error = await rejection(
        sandbox.execute({ sessionId: 'conformance', ...sh('sleep 30') }, { signal: controller.signal }),
      );
      assert.ok(isAlephError(error, 'ALEPH_ABORTED'), `expected ALEPH_ABORTED, got ${String(error)}`);
      assert.ok(Date.now() - started < 10_000);
    },
  },

  // ── isolation ──────────────────────────────────────────────────────────────────────────────
  {
    id: 'fs.write-outside',
    title: 'cannot write outside the workspace',
    requires: requirementsOf(SH_CAPS),
    async check({ run, outside }) {
      const target = path.join(outside, 'escaped.txt');
      await run(sh(`echo pwned > '${target}'`));
      assert.equal(existsSync(target), false, `${target} was created`);
    },
  },
  {
    id: 'fs.read-outside',
    title: 'cannot read files outside the workspace',
    requires: requirementsOf(SH_CAPS),
    async check({ run, outside }) {
      const secret = path.join(outside, 'secret.txt');
      writeFileSync(secret, 'conformance-secret-42\n', { mode: 0o644 });
      const out = await run(sh(`cat '${secret}'`));
      assert.doesNotMatch(out.stdoutText, /conformance-secret-42/);
    },
  },
  {
    id: 'fs.sessions-isolated',
    title: "a session cannot see another session's workspace",
    requires: requirementsOf(SH_CAPS),
    async check({ run, workspaceOf }) {
      const other = await workspaceOf('other-session');
      writeFileSync(path.join(other, 'private.txt'), 'other-session-data\n', { mode: 0o644 });
      const out = await run(sh(`cat '${path.join(other, 'private.txt')}'; ls '${other}'`));
      assert.doesNotMatch(out.stdoutText, /other-session-data|private\.txt/);
    },
  },
  {
    id: 'fs.read-grant',
    title: 'a granted read path is readable but not writable',
    requires: requirementsOf({ fsRead: ['/granted'], spawnSubprocess: true }),
    async check({ run, outside }) {
      const dir = path.join(outside, 'ro');
      mkdirSync(dir, { recursive: true });
      writeFileSync(path.join(dir, 'data.txt'), 'readable\n', { mode: 0o644 });
      const out = await run({
        ...sh(`cat '${dir}/data.txt'; echo changed > '${dir}/data.txt'`),
        capabilities: { fsRead: [dir], spawnSubprocess: true },
      });
      assert.match(out.stdoutText, /readable/);
      assert.equal(readFileSync(path.join(dir, 'data.txt'), 'utf8'), 'readable\n');
    },
  },
  {
    id: 'fs.write-grant',
    title: 'a granted write path is writable',
    requires: requirementsOf({ fsWrite: ['/granted'], spawnSubprocess: true }),
    async check({ run, outside }) {
      const dir = path.join(outside, 'rw');
      mkdirSync(dir, { recursive: true });
      chmodSync(dir, 0o777); // writable by whichever uid the driver runs commands as
      const out = await run({
        ...sh(`echo written > '${dir}/out.txt'`),
        capabilities: { fsWrite: [dir], spawnSubprocess: true },
      });
      assert.equal(out.exitCode, 0, out.stderrText);
      assert.equal(readFileSync(path.join(dir, 'out.txt'), 'utf8'), 'written\n');
    },
  },
  {
    id: 'fs.protected-paths',
    title: '.git/hooks stays read-only inside the workspace',
    requires: [...requirementsOf(SH_CAPS), 'fs.protected-paths'],
    async check({ run, workspaceOf }) {
      const ws = await workspaceOf();
      mkdirSync(path.join(ws, '.git', 'hooks'), { recursive: true });
      await run(sh('echo "#!/bin/sh" > .git/hooks/pre-commit'));
      assert.equal(existsSync(path.join(ws, '.git', 'hooks', 'pre-commit')), false, 'a hook was planted');
    },
  },
  {
    id: 'net.none',
    title: 'network none cannot reach a host loopback port',
    requires: requirementsOf(undefined),
    platforms: ['linux'],
    async check({ run }) {
      const listener = await loopbackListener();
      try {
        const script = `exec 3<>/dev/tcp/127.0.0.1/${listener.port} && echo connected`;
        const out = await run({ program: 'bash', args: ['-c', script] });
        assert.doesNotMatch(out.stdoutText, /connected/);
        assert.equal(listener.connections(), 0);
      } finally {
        await listener.close();
      }
    },
  },
  {
    id: 'proc.deny-spawn',
    title: 'spawnSubprocess false stops the command from starting a child',
    requires: requirementsOf(undefined),
    async check({ run }) {
      const out = await run({ program: '/bin/sh', args: ['-c', '/bin/echo child-ran; echo parent-done'] });
      assert.doesNotMatch(out.stdoutText, /child-ran/);
    },
  },
  {
    id: 'proc.allow-spawn',
    title: 'spawnSubprocess true lets the command start children',
    requires: requirementsOf(SH_CAPS),
    async check({ run }) {
      const out = await run({
        ...sh('/bin/echo child-ran; echo parent-done'),
        capabilities: { spawnSubprocess: true },
      });
      assert.equal(out.stdoutText, 'child-ran\nparent-done\n');
    },
  },
];
