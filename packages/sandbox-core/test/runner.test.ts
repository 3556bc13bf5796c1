import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { runBoundedProcess } from '../src/index.js';

const ENV = { PATH: '/usr/local/bin:/usr/bin:/bin' };
const base = { env: ENV, timeoutMs: 10_000, maxOutputBytes: 1024 * 1024 };
const text = (b: Uint8Array) => Buffer.from(b).toString('utf8');

/** Pids whose command line contains `marker` (Linux). */
function pidsWith(marker: string): number[] {
  const out: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const cmdline = readFileSync(`/proc/${name}/cmdline`, 'utf8');
      const state = readFileSync(`/proc/${name}/stat`, 'utf8').split(') ')[1]?.[0];
      if (cmdline.includes(marker) && state !== 'Z') out.push(Number(name));
    } catch {
      // gone
    }
  }
  return out;
}

async function eventually(check: () => boolean, ms = 3000): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (check()) return true;
    await new Promise((r) => setTimeout(r, 25));
  }
  return check();
}

describe.runIf(process.platform !== 'win32')('runBoundedProcess (real processes)', () => {
  it('reports exit code, stdout and stderr separately', async () => {
    const r = await runBoundedProcess({
      ...base,
      file: 'sh',
      args: ['-c', 'echo out; echo err >&2; exit 7'],
    });
    expect(r.exitCode).toBe(7);
    expect(r.signal).toBeNull();
    expect(text(r.stdout)).toBe('out\n');
    expect(text(r.stderr)).toBe('err\n');
    expect(r.timedOut).toBe(false);
  });

  it('delivers stdin and closes it', async () => {
    const r = await runBoundedProcess({ ...base, file: 'cat', args: [], stdin: 'hello\nworld' });
    expect(text(r.stdout)).toBe('hello\nworld');
    const bytes = await runBoundedProcess({
      ...base,
      file: 'wc',
      args: ['-c'],
      stdin: new Uint8Array(70_000),
    });
    expect(text(bytes.stdout).trim()).toBe('70000');
  });

  it('gives stdin /dev/null when there is none', async () => {
    const r = await runBoundedProcess({ ...base, file: 'cat', args: [] });
    expect(r.exitCode).toBe(0);
    expect(r.stdout.byteLength).toBe(0);
  });

  it('passes exactly the given environment', async () => {
    process.env.ALEPH_RUNNER_SECRET = 'leak';
    try {
      const r = await runBoundedProcess({ ...base, env: { ...ENV, ONLY: 'me' }, file: 'env', args: [] });
      const vars = text(r.stdout).trim().split('\n').sort();
      expect(vars).toEqual(['ONLY=me', `PATH=${ENV.PATH}`]);
    } finally {
      delete process.env.ALEPH_RUNNER_SECRET;
    }
  });

  it('reports a terminating signal', async () => {
    const r = await runBoundedProcess({ ...base, file: 'sh', args: ['-c', 'kill -TERM $$'] });
    expect(r.exitCode).toBeNull();
    expect(r.signal).toBe('SIGTERM');
  });

  it('truncates `yes` at the budget, reports it, and keeps stderr separate', async () => {
    const r = await runBoundedProcess({
      ...base,
      maxOutputBytes: 64 * 1024,
      file: 'sh',
      args: ['-c', 'yes | head -c 5000000; echo done >&2'],
    });
    expect(r.exitCode).toBe(0);
    expect(r.stdout.byteLength).toBe(32 * 1024);
    expect(r.stdoutTruncated).toBe(true);
    expect(text(r.stdout).startsWith('y\ny\n')).toBe(true);
    expect(text(r.stderr)).toBe('done\n');
    expect(r.stderrTruncated).toBe(false);
  });

  it('streams every chunk to the callbacks, beyond the budget too', async () => {
    let streamed = 0;
    const r = await runBoundedProcess({
      ...base,
      maxOutputBytes: 1024,
      file: 'sh',
      args: ['-c', 'head -c 100000 /dev/zero'],
      onStdout: (c) => {
        streamed += c.byteLength;
      },
    });
    expect(streamed).toBe(100_000);
    expect(r.stdout.byteLength).toBe(512);
  });

  it('feeds extra file descriptors', async () => {
    const r = await runBoundedProcess({
      ...base,
      file: 'sh',
      args: ['-c', 'cat <&3; cat <&4'],
      extraFds: [new TextEncoder().encode('three '), new TextEncoder().encode('four')],
    });
    expect(text(r.stdout)).toBe('three four');
  });

  it('rejects when the program cannot be started', async () => {
    await expect(runBoundedProcess({ ...base, file: '/nonexistent/prog', args: [] })).rejects.toThrow(
      /ENOENT/,
    );
  });

  it.runIf(process.platform === 'linux')(
    'a timeout kills a child that ignores SIGTERM and all its grandchildren, setsid ones too',
    async () => {
      const marker = `aleph-timeout-${process.pid}-${Date.now()}`;
      const script = `trap '' TERM; (sleep 1000 & sleep 1001; : ${marker}) & setsid sh -c 'sleep 1002; : ${marker}' & sleep 1003; : ${marker}`;
      const r = await runBoundedProcess({ ...base, timeoutMs: 400, file: 'sh', args: ['-c', script] });
      expect(r.timedOut).toBe(true);
      expect(r.killedBy).toBe('timeout');
      expect(r.signal).toBe('SIGKILL');
      expect(await eventually(() => pidsWith(marker).length === 0)).toBe(true);
    },
  );

  it.runIf(process.platform === 'linux')(
    'kills what the program leaves behind in its group when it exits',
    async () => {
      const marker = `aleph-orphan-${process.pid}-${Date.now()}`;
      const r = await runBoundedProcess({
        ...base,
        file: 'sh',
        args: ['-c', `sh -c 'sleep 1000; : ${marker}' >/dev/null 2>&1 & exit 0`],
      });
      expect(r.exitCode).toBe(0);
      expect(await eventually(() => pidsWith(marker).length === 0)).toBe(true);
    },
  );

  it('an abort kills the tree and is reported', async () => {
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 100);
    const r = await runBoundedProcess({ ...base, file: 'sleep', args: ['100'], signal: controller.signal });
    expect(r.killedBy).toBe('abort');
    expect(r.timedOut).toBe(false);
    expect(r.signal).toBe('SIGKILL');
  });
});
