import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createKillRequest, runBoundedProcess } from '../src/index.js';
import { DRAIN_BYTES } from '../src/run-output.js';

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

  describe('backpressure: a callback that returns a promise pauses its stream', () => {
    const MB = 1_000_000;
    const withDir = async (body: (dir: string) => Promise<void>) => {
      const dir = mkdtempSync(path.join(os.tmpdir(), 'aleph-runner-'));
      try {
        await body(dir);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    };

    it.each([
      { stream: 'stdout', redirect: '' },
      { stream: 'stderr', redirect: '>&2' },
    ] as const)(
      '$stream: the command blocks until the promise settles, and nothing is lost',
      async ({ stream, redirect }) =>
        withDir(async (dir) => {
          // The command writes 4 MB (far more than a pipe and a stream buffer hold), then leaves a mark.
          const mark = path.join(dir, 'wrote-everything');
          let release!: () => void;
          const held = new Promise<void>((r) => {
            release = r;
          });
          let streamed = 0;
          let calls = 0;
          let seenWhileHeld = -1;
          const callback = (c: Uint8Array) => {
            streamed += c.byteLength;
            calls++;
            return calls === 1 ? held : undefined;
          };
          const run = runBoundedProcess({
            ...base,
            maxOutputBytes: 1024,
            file: 'sh',
            args: ['-c', `head -c ${4 * MB} /dev/zero ${redirect}; touch ${mark}`],
            ...(stream === 'stdout' ? { onStdout: callback } : { onStderr: callback }),
          });
          // Give the command every chance to write everything; it cannot, while the first chunk is held.
          await new Promise((r) => setTimeout(r, 300));
          seenWhileHeld = calls;
          expect(existsSync(mark)).toBe(false);
          release();
          const r = await run;
          expect(seenWhileHeld).toBe(1);
          expect(existsSync(mark)).toBe(true);
          expect(r.exitCode).toBe(0);
          expect(streamed).toBe(4 * MB);
          expect((stream === 'stdout' ? r.stdout : r.stderr).byteLength).toBe(512);
        }),
    );

    it('a slow consumer gets every chunk, in order', async () => {
      const parts: Buffer[] = [];
      const r = await runBoundedProcess({
        ...base,
        file: 'sh',
        args: ['-c', 'seq 1 200000'],
        onStdout: async (c) => {
          parts.push(Buffer.from(c));
          await new Promise((resolve) => setImmediate(resolve));
        },
      });
      expect(r.exitCode).toBe(0);
      const lines = Buffer.concat(parts).toString('utf8').trim().split('\n');
      expect(lines).toHaveLength(200_000);
      expect(lines.every((l, i) => l === String(i + 1))).toBe(true);
    });

    it('a rejected promise stops the streaming to that callback; the run goes on', async () => {
      let calls = 0;
      const r = await runBoundedProcess({
        ...base,
        file: 'sh',
        args: ['-c', `head -c ${MB} /dev/zero; echo done >&2`],
        onStdout: () => {
          calls++;
          return Promise.reject(new Error('consumer gone'));
        },
      });
      expect(r.exitCode).toBe(0);
      expect(calls).toBe(1);
      expect(text(r.stderr)).toBe('done\n');
    });

    it('a consumer that never drains cannot keep a timed-out command alive', async () => {
      const r = await runBoundedProcess({
        ...base,
        timeoutMs: 300,
        file: 'sh',
        args: ['-c', `head -c ${4 * MB} /dev/zero`],
        onStdout: () => new Promise<void>(() => {}),
      });
      expect(r.timedOut).toBe(true);
      expect(r.killedBy).toBe('timeout');
    });

    it.runIf(process.platform === 'linux')(
      'a graceful stop keeps the pause through its grace; the kill hands over at most DRAIN_BYTES more',
      async () => {
        // The program ignores SIGTERM and writes without end; its consumer took one chunk, never more.
        let streamed = 0;
        let first = 0;
        const r = await runBoundedProcess({
          ...base,
          timeoutMs: 200,
          gracefulStop: { signal: 'SIGTERM', graceMs: 400 },
          file: 'sh',
          args: ['-c', "trap '' TERM; while :; do head -c 1048576 /dev/zero; done"],
          onStdout: (c) => {
            if (streamed === 0) first = c.byteLength;
            streamed += c.byteLength;
            return new Promise<void>(() => {});
          },
        });
        expect(r.killedBy).toBe('timeout');
        expect(r.signal).toBe('SIGKILL');
        // Draining at the SIGTERM would have handed over all it wrote in the grace (hundreds of MB).
        expect(streamed).toBeGreaterThan(first);
        expect(streamed).toBeLessThanOrEqual(first + DRAIN_BYTES);
      },
    );

    it('a program that ends within the grace is drained at its exit, not when the grace runs out', async () => {
      // A grace longer than the test's own timeout: waiting for it would fail the test.
      const r = await runBoundedProcess({
        ...base,
        timeoutMs: 200,
        gracefulStop: { signal: 'SIGTERM', graceMs: 10 * 60_000 },
        file: 'sh',
        args: ['-c', `exec head -c ${4 * MB} /dev/zero`],
        onStdout: () => new Promise<void>(() => {}),
      });
      expect(r.killedBy).toBe('timeout');
      expect(r.signal).toBe('SIGTERM');
    });
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

  /**
   * bash's race, made wide: a script whose trap takes the SIGINT, then execs `sleep 30`. The SIGINT is asked
   * for `afterMs` after it printed `ready` (a soft kill with `graceMs`); `background` is how long it waits
   * first (its trap ends the wait).
   */
  async function trapThenExec(afterMs: number, graceMs: number, background: number) {
    const controller = new AbortController();
    const inner = `trap 'echo caught' INT; echo ready; sleep ${background} & wait; exec sleep 30`;
    return runBoundedProcess({
      ...base,
      timeoutMs: 60_000,
      gracefulStop: { signal: 'SIGTERM', graceMs: 20_000 },
      file: 'sh',
      args: ['-c', `bash -c "${inner}"; echo "after=$?"`],
      signal: controller.signal,
      onStdout: (c) => {
        if (text(c).includes('ready'))
          setTimeout(() => controller.abort(createKillRequest('SIGINT', graceMs)), afterMs);
      },
    });
  }

  it.runIf(process.platform === 'linux')(
    'a soft SIGINT that a program catches just before it execs another reaches the new program too',
    async () => {
      // The control is the same run without the second send: sleep lives until the grace's SIGKILL.
      const r = await trapThenExec(50, 20_000, 0.5);
      expect(text(r.stdout)).toMatch(/ready\ncaught\nafter=130\n$/);
      expect(r.killedBy).toBe('kill');
      expect(r.signal).toBeNull();
      expect(r.exitCode).toBe(0);
    },
  );

  it.runIf(process.platform === 'linux')(
    "a program that ran a while before it caught the SIGINT and exec'd is left to the program it became",
    async () => {
      // `trap 'exec cleanup' INT` in a script that has run for seconds: its cleanup is not interrupted.
      const r = await trapThenExec(2500, 1500, 5);
      // sleep 30 outlived the SIGINT: the grace's end stopped the whole run (sh never printed after=).
      expect(text(r.stdout)).toBe('ready\ncaught\n');
      expect(r.killedBy).toBe('kill');
      expect(r.signal).not.toBeNull();
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
