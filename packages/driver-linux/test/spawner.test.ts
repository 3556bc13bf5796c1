import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { runBoundedProcess } from '@aleph/sandbox-core';
import { afterAll, describe, expect, it } from 'vitest';
import { checkHelperSync, resolveHelperPath } from '../src/index.js';
import { createForkServer } from '../src/run/fork-server.js';
import { tempDirs } from './temp-dirs.js';

// The fork server (native/linux/spawner/spawner.c + src/run/fork-server*.ts) against the real helper binary.
const helper = resolveHelperPath();
const usable = process.platform === 'linux' && checkHelperSync(helper).ok;
const tempDir = tempDirs('aleph-spawner-test-');
const PATH = '/usr/sbin:/usr/bin:/sbin:/bin';
const text = (b: Uint8Array) => Buffer.from(b).toString('utf8');

describe.skipIf(!usable)(
  `the fork server${usable ? '' : ' [skipped: the helper is not built (pnpm build)]'}`,
  () => {
    const state = tempDir();
    const server = createForkServer(helper, state);
    afterAll(() => server.dispose());
    const run = (args: string[], extra: Partial<Parameters<typeof runBoundedProcess>[0]> = {}) =>
      runBoundedProcess({
        file: '/bin/sh',
        args: ['-c', ...args],
        env: { PATH, ONLY: 'this' },
        cwd: '/',
        timeoutMs: 10_000,
        maxOutputBytes: 1 << 20,
        starter: server.start,
        ...extra,
      });

    it('runs a program with exactly the given environment, cwd, stdin and extra descriptors', async () => {
      const cwd = tempDir();
      const r = await run(['env; pwd; cat; cat <&3; echo; cat <&4; echo err >&2; exit 7'], {
        cwd,
        stdin: 'from stdin\n',
        extraFds: [Buffer.from('three'), Buffer.from('four')],
      });
      expect(r.exitCode).toBe(7);
      const lines = text(r.stdout).split('\n');
      const env = lines.filter(
        (l) => /^[A-Z_]+=/.test(l) && !l.startsWith('PWD=') && !l.startsWith('OLDPWD='),
      );
      expect(env.sort()).toEqual([`ONLY=this`, `PATH=${PATH}`]);
      expect(lines).toContain(cwd);
      expect(lines).toContain('from stdin');
      expect(text(r.stdout)).toContain('three\nfour');
      expect(text(r.stderr)).toBe('err\n');
    });

    it('starts each program as the leader of a new session, and reports a kill by signal', async () => {
      const r = await run(['echo "$$ $(ps -o sid= -p $$)"']);
      const [pid, sid] = text(r.stdout).trim().split(/\s+/);
      expect(sid).toBe(pid);
      expect(Number(pid)).toBe(r.pid);
      const killed = await run(['kill -TERM $$']);
      expect(killed).toMatchObject({ exitCode: null, signal: 'SIGTERM' });
    });

    it('a timeout kills the whole group, as with a forked child', async () => {
      const pidFile = path.join(tempDir(), 'bg');
      const r = await run([`sleep 30 & echo $! > ${pidFile}; sleep 30`], { timeoutMs: 300 });
      expect(r.timedOut).toBe(true);
      expect(r.killedBy).toBe('timeout');
      const bg = Number(readFileSync(pidFile, 'utf8'));
      const alive = () => {
        try {
          return !/\) [ZX] /.test(readFileSync(`/proc/${bg}/stat`, 'utf8'));
        } catch {
          return false;
        }
      };
      for (let i = 0; i < 50 && alive(); i++) await new Promise((res) => setTimeout(res, 20));
      expect(alive()).toBe(false);
    });

    it('an unknown program is a start error with its errno code', async () => {
      await expect(
        runBoundedProcess({
          file: '/nonexistent/program',
          args: [],
          env: { PATH },
          timeoutMs: 5_000,
          maxOutputBytes: 1024,
          starter: server.start,
        }),
      ).rejects.toMatchObject({ code: 'ENOENT' });
      await expect(run(['echo a\0b'])).rejects.toThrow(/NUL/);
      // The server is still there for the next run.
      expect(text((await run(['echo still'])).stdout)).toBe('still\n');
    });

    it('a connection without a run token is dropped and cannot inject output', async () => {
      const sock = readdirSync(state).find((n) => n.startsWith('spawn-')) as string;
      expect(sock).toBeDefined();
      const intruder = net.connect(path.join(state, sock));
      const closed = new Promise<void>((resolve) => intruder.on('close', () => resolve()));
      intruder.on('error', () => {});
      intruder.write(Buffer.concat([randomBytes(16), Buffer.from([1, 0, 0, 0]), Buffer.from('injected\n')]));
      await closed;
      const r = await run(['sleep 0.1; echo clean']);
      expect(text(r.stdout)).toBe('clean\n');
    });

    it('many runs at once each get their own output', async () => {
      const results = await Promise.all(
        Array.from({ length: 40 }, (_, i) => run([`echo ${i}; echo e${i} >&2`])),
      );
      results.forEach((r, i) => {
        expect(text(r.stdout)).toBe(`${i}\n`);
        expect(text(r.stderr)).toBe(`e${i}\n`);
      });
    });
  },
);

describe.skipIf(!usable)(
  `the fork server's lifetime${usable ? '' : ' [skipped: the helper is not built]'}`,
  () => {
    const script = (state: string, body: string) => {
      const file = path.join(tempDir(), 'script.mjs');
      const spawnerJs = fileURLToPath(new URL('../dist/run/fork-server.js', import.meta.url));
      const core = fileURLToPath(new URL('../../sandbox-core/dist/index.js', import.meta.url));
      writeFileSync(
        file,
        `import { createForkServer } from ${JSON.stringify(spawnerJs)};
import { runBoundedProcess } from ${JSON.stringify(core)};
const server = createForkServer(${JSON.stringify(helper)}, ${JSON.stringify(state)});
const run = (cmd) => runBoundedProcess({ file: '/bin/sh', args: ['-c', cmd], env: { PATH: '/usr/bin:/bin' }, timeoutMs: 10000, maxOutputBytes: 4096, starter: server.start });
${body}`,
      );
      return spawnSync(process.execPath, [file], { encoding: 'utf8', timeout: 20_000 });
    };

    it('does not keep an idle process alive, and its socket goes with the server when disposed', () => {
      const state = tempDir();
      const idle = script(state, `const r = await run('echo hi'); console.log(r.exitCode, r.stdout.length);`);
      expect(idle.error).toBeUndefined(); // no timeout: the process ended by itself
      expect(idle.stdout.trim()).toBe('0 3');
      const disposed = script(state, `await run('true'); await server.dispose(); console.log('ok');`);
      expect(disposed.stdout.trim()).toBe('ok');
      // The first script's socket was left (it never disposed); the second removed it as stale and its own.
      expect(readdirSync(state).filter((n) => n.startsWith('spawn-'))).toEqual([]);
    });

    it('a run in flight fails when the server dies, and the next run starts a new one', () => {
      const state = tempDir();
      const out = script(
        state,
        `const first = run('sleep 5').then(() => 'resolved', (e) => 'rejected: ' + e.message);
await new Promise((r) => setTimeout(r, 300));
const { execFileSync } = await import('node:child_process');
const pids = execFileSync('pgrep', ['-f', '--', '--spawner ${state}']).toString().trim().split('\\n');
for (const p of pids) process.kill(Number(p), 'SIGKILL');
console.log(await first);
console.log((await run('echo again')).exitCode);
await server.dispose();`,
      );
      expect(out.stdout).toMatch(/^rejected: the sandbox fork server exited\n0\n$/);
      expect(existsSync(state)).toBe(true);
    });
  },
);
