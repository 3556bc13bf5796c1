import { type ChildProcessWithoutNullStreams, spawn, spawnSync } from 'node:child_process';
import diagnosticsChannel from 'node:diagnostics_channel';
import {
  chmodSync,
  chownSync,
  closeSync,
  existsSync,
  openSync,
  readdirSync,
  readFileSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import http from 'node:http';
import type net from 'node:net';
import path from 'node:path';
import { startProxy } from '@aleph/proxy';
import {
  type AlephSandbox,
  buildSandbox,
  createCallbackApprovalRequester,
  parseConfig,
} from '@aleph/sandbox';
import {
  CAPABILITY_LEDGER_CHANNEL,
  type CapabilityLedgerRecord,
  COMMAND_POLICY_CHANNEL,
} from '@aleph/sandbox-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { canSwitchUid, linuxStack, REQUIRED, repoRoot, runAsync, tempDirs } from '../support.js';

const stack = linuxStack();
const cli = path.join(repoRoot, 'packages/sandbox/dist/cli-bundle/aleph-sandbox.cjs');

const tmp = tempDirs();

/** Runs the CLI as a user would, asynchronously (the upstream server lives in this process). */
async function runCli(
  args: string[],
  options: { input?: string; home: string },
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const r = await runAsync(process.execPath, [cli, ...args], {
    input: options.input,
    env: { ...process.env, HOME: options.home },
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe.skipIf(!stack.ok && !stack.missing.some((m) => REQUIRED.has(m)))(
  `@aleph/sandbox on the real Linux stack${stack.ok ? '' : ` [skipped: ${stack.reason}]`}`,
  () => {
    let upstream: http.Server;
    let port = 0;
    let hits: string[] = [];
    beforeAll(async () => {
      upstream = http.createServer((req, res) => {
        hits.push(`${req.headers.host}${req.url}`);
        res.end(`hello ${req.url}`);
      });
      await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
      port = (upstream.address() as net.AddressInfo).port;
    });
    afterAll(() => new Promise<void>((r) => upstream.close(() => r())));

    const config = (over: Record<string, unknown> = {}) =>
      parseConfig({ sandbox: { workspace_root: path.join(tmp('aleph-product-'), 'ws'), ...over } });

    it("keeps a session's files between executions and sessions apart", async () => {
      const sandbox = await buildSandbox(config());
      try {
        await sandbox.execute({ sessionId: 'a', program: 'sh', args: ['-c', 'echo mine > note.txt'] });
        expect(
          (await sandbox.execute({ sessionId: 'a', program: 'cat', args: ['note.txt'] })).stdoutText,
        ).toBe('mine\n');
        const other = await sandbox.execute({
          sessionId: 'b',
          program: 'cat',
          args: [path.join(sandbox.workspacePath('a'), 'note.txt')],
        });
        expect(other.exitCode).not.toBe(0);
        expect(other.stdoutText).toBe('');
      } finally {
        await sandbox.dispose();
      }
    });

    it('stops rm -rf / in the policy before anything runs, and the audit shows it', async () => {
      const ledger: CapabilityLedgerRecord[] = [];
      const policy: Record<string, unknown>[] = [];
      const onLedger = (m: unknown) => ledger.push(m as CapabilityLedgerRecord);
      const onPolicy = (m: unknown) => policy.push(m as Record<string, unknown>);
      diagnosticsChannel.subscribe(CAPABILITY_LEDGER_CHANNEL, onLedger);
      diagnosticsChannel.subscribe(COMMAND_POLICY_CHANNEL, onPolicy);
      const cfg = config();
      const sandbox = await buildSandbox(cfg);
      try {
        await expect(
          sandbox.execute({ sessionId: 'p', program: 'rm', args: ['-rf', '/'] }),
        ).rejects.toMatchObject({
          code: 'ALEPH_POLICY_DENIED',
        });
        expect(existsSync(cfg.workspaceRoot)).toBe(false); // nothing was created, nothing ran
        expect(ledger.filter((r) => r.sessionId === 'p')).toMatchObject([
          { program: 'rm', outcome: 'denied', denial: { code: 'ALEPH_POLICY_DENIED' } },
        ]);
        expect(policy).toContainEqual(expect.objectContaining({ decision: 'block', rules: ['rm-rf-root'] }));
      } finally {
        diagnosticsChannel.unsubscribe(CAPABILITY_LEDGER_CHANNEL, onLedger);
        diagnosticsChannel.unsubscribe(COMMAND_POLICY_CHANNEL, onPolicy);
        await sandbox.dispose();
      }
    });

    /** A sandbox whose managed proxy resolves *.test to the local upstream. */
    const networked = (over: Record<string, unknown> = {}) =>
      buildSandbox(config(over), {
        approvalRequester: createCallbackApprovalRequester(() => 'session'),
        resolver: async (name) => (name.endsWith('.test') ? ['127.0.0.1'] : []),
      });

    /** curl to api.test (allowed) and to other.test (not) under allowHosts: the body and the status. */
    async function curlBoth(sandbox: AlephSandbox, sessionId: string, pathName: string) {
      const capabilities = {
        network: { kind: 'allowHosts' as const, hosts: ['api.test', `127.0.0.1:${port}`] },
      };
      const curl = (args: string[]) => sandbox.execute({ sessionId, program: 'curl', args, capabilities });
      const ok = await curl(['-sS', `http://api.test:${port}${pathName}`]);
      const denied = await curl([
        '-sS',
        '-o',
        '/dev/null',
        '-w',
        '%{http_code}',
        `http://other.test:${port}/`,
      ]);
      return { ok: ok.stdoutText, denied: denied.stdoutText };
    }

    it('reaches an allowed host through the managed proxy; a disallowed one gets the denial', async () => {
      hits = [];
      const sandbox = await networked();
      try {
        expect(await curlBoth(sandbox, 'n', '/ok')).toEqual({ ok: 'hello /ok', denied: '403' });
        expect(hits).toEqual([`api.test:${port}/ok`]);
      } finally {
        await sandbox.dispose();
      }
    });

    it('goes through the parent proxy set in the config, asking it only for hosts it allowed', async () => {
      hits = [];
      const parent = await startProxy({ allow: [`127.0.0.1:${port}`] });
      const parentAt = `http://127.0.0.1:${(parent.address as { port: number }).port}`;
      const sandbox = await networked({ network: { parent_proxy: parentAt } });
      try {
        expect(await curlBoth(sandbox, 'p', '/via-parent')).toEqual({
          ok: 'hello /via-parent',
          denied: '403',
        });
        // One tunnel asked of the parent: the allowed one. The denied host never reached it.
        expect(parent.stats().allowed).toBe(1);
        expect(parent.stats().connections).toBe(1);
        expect(hits).toEqual([`api.test:${port}/via-parent`]);
      } finally {
        await sandbox.dispose();
        await parent.close();
      }
    });

    it('an approval "for this session" is not asked again for a narrower request', async () => {
      let asked = 0;
      const data = tmp('aleph-data-');
      writeFileSync(path.join(data, 'x.txt'), 'shared\n', { mode: 0o644 });
      const sandbox = await buildSandbox(config(), {
        approvalRequester: createCallbackApprovalRequester(() => {
          asked++;
          return 'session';
        }),
      });
      try {
        await sandbox.execute({
          sessionId: 'g',
          program: 'ls',
          args: [data],
          capabilities: { fsRead: [data], spawnSubprocess: true },
        });
        const narrower = await sandbox.execute({
          sessionId: 'g',
          program: 'cat',
          args: [path.join(data, 'x.txt')],
          capabilities: { fsRead: [path.join(data, 'x.txt')] },
        });
        expect(narrower.stdoutText).toBe('shared\n');
        expect(asked).toBe(1);
      } finally {
        await sandbox.dispose();
      }
    });

    it('enabled = false fails fast', async () => {
      const sandbox = await buildSandbox(config({ enabled: false }));
      await expect(sandbox.execute({ sessionId: 'x', program: 'true' })).rejects.toThrow(
        /^sandbox disabled: /,
      );
    });

    it('50 sessions x 10 concurrent executions: all run, one audit record each, nothing left behind', async () => {
      const ledger: CapabilityLedgerRecord[] = [];
      const onLedger = (m: unknown) => ledger.push(m as CapabilityLedgerRecord);
      diagnosticsChannel.subscribe(CAPABILITY_LEDGER_CHANNEL, onLedger);
      const cfg = config({ rate_limit: { capacity: 100 } });
      const sandbox = await buildSandbox(cfg);
      const fdsBefore = readdirSync('/proc/self/fd').length;
      try {
        const runs: Promise<unknown>[] = [];
        for (let s = 0; s < 50; s++) {
          for (let i = 0; i < 10; i++)
            runs.push(sandbox.execute({ sessionId: `load-${s}`, program: 'true' }));
        }
        const results = (await Promise.all(runs)) as { exitCode: number }[];
        expect(results.every((r) => r.exitCode === 0)).toBe(true);
      } finally {
        diagnosticsChannel.unsubscribe(CAPABILITY_LEDGER_CHANNEL, onLedger);
        await sandbox.dispose();
      }
      const mine = ledger.filter((r) => typeof r.sessionId === 'string' && r.sessionId.startsWith('load-'));
      expect(mine).toHaveLength(500);
      expect(new Set(mine.map((r) => r.outcome))).toEqual(new Set(['completed']));
      expect(readdirSync(cfg.workspaceRoot)).toHaveLength(50);
      expect(readdirSync('/proc/self/fd').length).toBeLessThanOrEqual(fdsBefore);
      const bwraps = readdirSync('/proc').filter((p) => {
        try {
          return /^\d+$/.test(p) && readFileSync(`/proc/${p}/cmdline`, 'utf8').includes(cfg.workspaceRoot);
        } catch {
          return false;
        }
      });
      expect(bwraps).toEqual([]);
    }, 120_000);

    describe('aleph-sandbox CLI', () => {
      const home = tmp('aleph-cli-home-');

      it('runs a command, streams its output and exits with its code', async () => {
        const ok = await runCli(['run', '--', 'sh', '-c', 'echo out; echo err >&2'], { home });
        expect(ok).toMatchObject({ code: 0, stdout: 'out\n', stderr: 'err\n' });
        expect((await runCli(['run', '--', 'sh', '-c', 'exit 3'], { home })).code).toBe(3);
      });

      const root = process.getuid?.() === 0;
      it.skipIf(!root)(
        `a root-owned write grant is writable through its idmapped mount, and its owner and mode stay${root ? '' : ' [skipped: only a root host runs commands as another uid]'}`,
        async () => {
          const dir = tmp('aleph-cli-grant-');
          chmodSync(dir, 0o750);
          const before = statSync(dir);
          const r = await runCli(
            [
              'run',
              '--approve',
              'all',
              '--allow-spawn',
              '--allow-write',
              dir,
              '--',
              'sh',
              '-c',
              `echo made > ${dir}/new.txt; id -u`,
            ],
            { home },
          );
          expect(r.code, r.stderr).toBe(0);
          expect(Number(r.stdout.trim())).toBeGreaterThan(65535); // a uid of the command's own
          const after = statSync(dir);
          expect([after.uid, after.gid, after.mode]).toEqual([before.uid, before.gid, before.mode]);
          const made = statSync(path.join(dir, 'new.txt'));
          expect([made.uid, made.gid]).toEqual([before.uid, before.gid]);
          expect(readdirSync(dir).sort()).toEqual(['new.txt']);
        },
      );

      // The CLI's compile cache is code the next start runs outside any sandbox. A command allowed to
      // write the home directory must not be able to write it: as root (commands run as the sandbox uid)
      // and as an unprivileged user (commands run as that same uid, in a user namespace).
      const users: { name: string; uid?: number }[] = [{ name: 'root' }];
      if (canSwitchUid()) users.push({ name: 'an unprivileged uid (setpriv)', uid: 65534 });
      it.each(users)(
        `a command allowed to write ~ cannot write the compile cache in ~/.aleph/cache, as $name${root ? '' : ' [skipped: needs root]'}`,
        async ({ uid }) => {
          if (!root) return;
          const userHome = tmp('aleph-cli-cachehome-');
          chmodSync(userHome, 0o755);
          // Root runs commands as the sandbox uid, which must own a directory it is granted.
          chownSync(userHome, uid ?? 65533, uid ?? 65533);
          const asUser = (args: string[]) =>
            runAsync(
              uid === undefined ? process.execPath : 'setpriv',
              uid === undefined
                ? [cli, ...args]
                : [`--reuid=${uid}`, `--regid=${uid}`, '--clear-groups', process.execPath, cli, ...args],
              { env: { ...process.env, HOME: userHome, ALEPH_COMPILE_CACHE: '1' } },
            );
          expect((await asUser(['--version'])).status).toBe(0);
          const cacheDir = path.join(userHome, '.aleph', 'cache');
          const [v8dir] = readdirSync(cacheDir);
          expect(v8dir).toBeDefined();
          const cached = path.join(cacheDir, v8dir as string);
          const before = new Map(readdirSync(cached).map((f) => [f, readFileSync(path.join(cached, f))]));
          expect(before.size).toBeGreaterThan(0);
          const attempt = [
            `echo ok > ${userHome}/written-home && echo home-writable`,
            `for f in ${cacheDir}/*/*.v8; do echo evil > "$f" && echo "WROTE $f"; done`,
            `touch ${cacheDir}/${v8dir}/planted.v8 && echo PLANTED`,
            `mv ${cacheDir} ${userHome}/moved && echo MOVED`,
          ].join('; ');
          const r = await asUser([
            'run',
            '--approve',
            'all',
            '--allow-spawn',
            '--allow-write',
            userHome,
            '--',
            'sh',
            '-c',
            attempt,
          ]);
          expect(r.stdout, r.stderr).toContain('home-writable');
          expect(r.stdout).not.toMatch(/WROTE|PLANTED|MOVED/);
          // (The CLI itself adds caches for the chunks a run loads, after the command has ended.)
          expect(readdirSync(cached)).not.toContain('planted.v8');
          for (const [f, content] of before)
            expect(readFileSync(path.join(cached, f)).equals(content), f).toBe(true);
        },
      );

      /** Runs the CLI, handing the child to `act` (which ends its stdin) instead of writing input. */
      const cliWith = (args: string[], act: (child: ChildProcessWithoutNullStreams) => void) =>
        runAsync(process.execPath, [cli, ...args], { env: { ...process.env, HOME: home }, act });

      it('a reader that goes away ends the command with 141, quietly; SIGTERM to the CLI with 143', async () => {
        // `aleph-sandbox run -- yes | head -1`: the reader closes after its first line.
        const piped = await cliWith(['run', '--', 'yes'], (child) => {
          child.stdin.end();
          child.stdout.once('data', () => child.stdout.destroy());
        });
        expect({ status: piped.status, stderr: piped.stderr }).toEqual({ status: 141, stderr: '' });
        const stopped = await cliWith(['run', '--', 'sh', '-c', 'echo started; exec sleep 30'], (child) => {
          child.stdin.end();
          child.stdout.once('data', () => child.kill('SIGTERM'));
        });
        expect(stopped.status).toBe(143);
      });

      it('124 on timeout, 128+N on a signal, 126 when denied, 2 on a usage error', async () => {
        expect((await runCli(['run', '--timeout', '0.5', '--', 'sleep', '10'], { home })).code).toBe(124);
        expect((await runCli(['run', '--', 'sh', '-c', 'kill -TERM $$'], { home })).code).toBe(143);
        const denied = await runCli(['run', '--', 'rm', '-rf', '/'], { home });
        expect(denied.code).toBe(126);
        expect(denied.stderr).toMatch(/rm-rf-root/);
        // A capability flag is granted for the run (typing it is the approval), a hidden path never is.
        const spawned = await runCli(['run', '--allow-spawn', '--', 'sh', '-c', 'echo a | cat'], { home });
        expect({ code: spawned.code, stdout: spawned.stdout }, spawned.stderr).toEqual({
          code: 0,
          stdout: 'a\n',
        });
        const hidden = await runCli(['run', '--allow-read', path.join(home, '.aleph', 'run'), '--', 'true'], {
          home,
        });
        expect(hidden.code, hidden.stderr).toBe(126);
        expect(hidden.stderr).toMatch(/\.aleph\/run/);
        for (const args of [
          ['run'],
          ['run', '--net', '', '--', 'true'],
          ['run', '--memory', '-1', '--', 'true'],
          ['nonsense'],
        ]) {
          const r = await runCli(args, { home });
          expect(r.code, args.join(' ')).toBe(2);
          expect(r.stderr.trim().split('\n')).toHaveLength(1);
        }
      });

      it('each capability flag is granted for the run without --approve (stdin is no terminal: nothing is asked)', async () => {
        const dir = tmp('aleph-cli-flags-');
        chmodSync(dir, 0o755);
        writeFileSync(path.join(dir, 'f'), 'readable\n');
        chmodSync(path.join(dir, 'f'), 0o644);
        const read = await runCli(['run', '--allow-read', dir, '--', 'cat', path.join(dir, 'f')], { home });
        expect({ code: read.code, stdout: read.stdout }, read.stderr).toEqual({
          code: 0,
          stdout: 'readable\n',
        });
        const net = await runCli(['run', '--net', 'example.com', '--', 'true'], { home });
        expect(net.code, net.stderr).toBe(0);
        // Without the flag, the same read is not granted (the command itself asks for nothing more).
        const without = await runCli(['run', '--', 'cat', path.join(dir, 'f')], { home });
        expect(without.code).not.toBe(0);
      });

      it('--json prints the SandboxOutput; --approve all grants; --workspace uses (and creates) the directory', async () => {
        const ws = path.join(tmp('aleph-cli-ws-'), 'new');
        const r = await runCli(
          [
            'run',
            '--json',
            '--approve',
            'all',
            '--allow-spawn',
            '--workspace',
            ws,
            '--',
            'sh',
            '-c',
            'pwd; echo x > f',
          ],
          { home },
        );
        expect(r.code).toBe(0);
        const out = JSON.parse(r.stdout);
        expect(out).toMatchObject({
          exitCode: 0,
          signal: null,
          stdout: `${ws}\n`,
          timedOut: false,
          stdoutTruncated: false,
        });
        // Which tier ran it and what that tier leaves unenforced (nothing in tiers 1 and 2 as this user).
        expect(out.details.tier).toMatch(/^(namespaces|user-namespace|direct)$/);
        expect(Array.isArray(out.details.notEnforced)).toBe(true);
        expect(readFileSync(path.join(ws, 'f'), 'utf8')).toBe('x\n');
      });

      it('passes piped stdin to the command', async () => {
        expect((await runCli(['run', '--', 'cat'], { home, input: 'piped in' })).stdout).toBe('piped in');
      });

      it('gives a file on stdin to the command whole, and runs without a device that may never end', () => {
        const file = path.join(tmp('aleph-cli-stdin-'), 'in.txt');
        writeFileSync(file, 'from a file\n');
        const withStdin = (fd: number | 'ignore') =>
          spawnSync(process.execPath, [cli, 'run', '--', 'cat'], {
            encoding: 'utf8',
            env: { ...process.env, HOME: home },
            stdio: [fd, 'pipe', 'pipe'],
            timeout: 30_000,
          });
        const fromFile = openSync(file, 'r');
        try {
          expect(withStdin(fromFile)).toMatchObject({ status: 0, stdout: 'from a file\n', stderr: '' });
        } finally {
          closeSync(fromFile);
        }
        // /dev/null: nothing, and nothing to say about it.
        expect(withStdin('ignore')).toMatchObject({ status: 0, stdout: '', stderr: '' });
        const zero = openSync('/dev/zero', 'r');
        try {
          const r = withStdin(zero);
          expect(r.status).toBe(0);
          expect(r.stdout).toBe('');
          expect(r.stderr).toMatch(/stdin is a device, not a file or a pipe; running without it/);
        } finally {
          closeSync(zero);
        }
      });

      /** Runs the CLI with stdin an open pipe that `feed` may write to; the pipe is never closed by us. */
      const withOpenStdin = async (args: string[], feed: (stdin: NodeJS.WritableStream) => void) => {
        const r = await runAsync(process.execPath, [cli, ...args], {
          env: { ...process.env, HOME: home },
          act: (child) => feed(child.stdin),
        });
        return { code: r.status, stdout: r.stdout, stderr: r.stderr };
      };

      it('does not wait forever on a stdin pipe nobody writes to or closes', async () => {
        const r = await withOpenStdin(['run', '--', 'echo', 'ran'], () => {});
        expect(r.code).toBe(0);
        expect(r.stdout).toBe('ran\n');
        expect(r.stderr).toMatch(/nothing arrived on stdin within 0\.25 s; running without it/);
      });

      it('reads a stdin pipe to its end once something arrives, and the filter sees it', async () => {
        const late = await withOpenStdin(['run', '--', 'sh', '-s'], (stdin) => {
          setTimeout(() => stdin.write('echo arrived late\n'), 50);
          setTimeout(() => stdin.end(), 400);
        });
        expect(late).toMatchObject({ code: 0, stdout: 'arrived late\n', stderr: '' });
        const blocked = await runCli(['run', '--', 'bash', '-s'], { home, input: 'echo hi\nrm -rf /\n' });
        expect(blocked.code).toBe(126);
        expect(blocked.stderr).toMatch(/command-policy denied/);
      });

      it('doctor reports the tier and mechanisms; --json too', async () => {
        const text = await runCli(['doctor'], { home });
        expect(text.code).toBe(0);
        // The tier the preflight ran a sandboxed `true` in, and what the rest of the line says it uses.
        expect(text.stdout).toMatch(/tier: tier \d: .* — Landlock ABI \d+ \+ seccomp-BPF/);
        expect(text.stdout).toMatch(/ok {3}tier-\d: .*ran a sandboxed `true`/);
        expect(text.stdout).toMatch(/ready: commands will run sandboxed/);
        const json = JSON.parse((await runCli(['doctor', '--json'], { home })).stdout);
        expect(json).toMatchObject({ driver: 'linux', available: true });
        expect(json.mechanisms.bubblewrap.available).toBe(true);
        expect(['namespaces', 'user-namespace', 'direct']).toContain(json.tierId);
        expect(Array.isArray(json.notEnforced)).toBe(true);
      });

      it('profile prints the plan without running anything', async () => {
        const r = await runCli(['profile', '--net', 'pypi.org', '--', 'pip', 'download', 'x'], { home });
        expect(r.code).toBe(0);
        expect(r.stdout).toMatch(/seccomp: sockets: AF_INET and AF_INET6 only/);
        expect(r.stdout).toMatch(/^bwrap .*--unshare-net.* pip download x$/m);
        const json = JSON.parse((await runCli(['profile', '--json', '--', 'ls'], { home })).stdout);
        expect(json.driver).toBe('linux');
        expect(json.seccomp.network).toBe('loopback');
        expect(r.stdout).toMatch(/^ {2}tier: (namespaces|user-namespace)$/m);
        expect(json.tier).toMatch(/^(namespaces|user-namespace)$/);
      });

      it('policy and proxy delegate to their CLIs', async () => {
        expect((await runCli(['policy', 'check', '--', 'rm', '-rf', '/'], { home })).code).toBe(1);
        expect((await runCli(['proxy', '--allow', 'http://bad'], { home })).code).toBe(2);
      });

      it('asks on a terminal for what goes beyond the flags; an answer "for this session" lets the command run', async () => {
        // --allow-spawn is granted by the flag; more memory than the config's ceiling is asked for.
        const config = path.join(tmp('aleph-cli-ceiling-'), 'config.toml');
        writeFileSync(config, '[sandbox.baseline]\nmax_memory_mb = 256\n');
        const driver = `
import json, os, pty, select, sys
pid, fd = pty.fork()
if pid == 0:
    os.environ['HOME'] = ${JSON.stringify(home)}
    os.execv(${JSON.stringify(process.execPath)}, [${JSON.stringify(process.execPath)}, ${JSON.stringify(cli)}, 'run', '--config', ${JSON.stringify(config)}, '--memory', '512', '--allow-spawn', '--', 'sh', '-c', 'echo approved | cat'])
out = b''
answered = False
while True:
    r, _, _ = select.select([fd], [], [], 20)
    if not r:
        break
    try:
        data = os.read(fd, 4096)
    except OSError:
        break
    if not data:
        break
    out += data
    if not answered and b'Allow?' in out:
        os.write(fd, b's\\n')
        answered = True
_, status = os.waitpid(pid, 0)
print(json.dumps({'out': out.decode('utf8', 'replace'), 'code': os.waitstatus_to_exitcode(status), 'answered': answered}))
`;
        const r = await new Promise<string>((resolve) => {
          const child = spawn('python3', ['-c', driver]);
          let out = '';
          child.stdout.on('data', (c) => {
            out += c;
          });
          child.on('close', () => resolve(out));
        });
        const result = JSON.parse(r);
        expect(result.answered).toBe(true);
        expect(result.out).toContain('+ 512 MiB of memory (ceiling 256 MiB)');
        expect(result.out).not.toContain('spawn subprocesses');
        expect(result.out).toContain('approved');
        expect(result.code).toBe(0);
      }, 60_000);
    });
  },
);
