import { describe, expect, it } from 'vitest';
import { createKillRequest, runBoundedProcess } from '../src/index.js';

const base = {
  env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
  timeoutMs: 10_000,
  maxOutputBytes: 1 << 20,
};
const text = (b: Uint8Array) => Buffer.from(b).toString('utf8');
const enc = (s: string) => new TextEncoder().encode(s);

async function* chunks(...parts: string[]): AsyncIterable<Uint8Array> {
  for (const p of parts) yield enc(p);
}

describe.runIf(process.platform !== 'win32')('runBoundedProcess: streamed stdin', () => {
  it('writes every chunk and closes stdin at the end (EOF)', async () => {
    const r = await runBoundedProcess({
      ...base,
      file: 'sh',
      args: ['-c', 'cat; echo " [eof]"'],
      stdin: chunks('one ', 'two ', 'three'),
    });
    expect(text(r.stdout)).toBe('one two three [eof]\n');
    expect(r.exitCode).toBe(0);
  });

  it('streams a large source with backpressure: 8 MiB, every byte arrives', async () => {
    let produced = 0;
    async function* big(): AsyncIterable<Uint8Array> {
      const block = new Uint8Array(64 * 1024).fill(120);
      for (let i = 0; i < 128; i++) {
        produced += block.byteLength;
        yield block;
      }
    }
    const r = await runBoundedProcess({ ...base, file: 'sh', args: ['-c', 'wc -c'], stdin: big() });
    expect(text(r.stdout).trim()).toBe(String(8 * 1024 * 1024));
    expect(produced).toBe(8 * 1024 * 1024);
  });

  it('a program that exits without reading stops the source (EPIPE tolerated)', async () => {
    let returned = false;
    const source: AsyncIterable<Uint8Array> = {
      [Symbol.asyncIterator]() {
        return {
          next: () => new Promise<IteratorResult<Uint8Array>>(() => {}),
          return: async () => {
            returned = true;
            return { value: undefined, done: true };
          },
        };
      },
    };
    const r = await runBoundedProcess({ ...base, file: 'sh', args: ['-c', 'exit 3'], stdin: source });
    expect(r.exitCode).toBe(3);
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(returned).toBe(true);
  });

  it('a source that throws ends stdin: the program sees EOF', async () => {
    async function* failing(): AsyncIterable<Uint8Array> {
      yield enc('partial');
      throw new Error('source broke');
    }
    const r = await runBoundedProcess({ ...base, file: 'cat', args: [], stdin: failing() });
    expect(text(r.stdout)).toBe('partial');
  });
});

describe.runIf(process.platform !== 'win32')('runBoundedProcess: kill requests', () => {
  it("a KillRequest reason is reported as killedBy 'kill', not 'abort'", async () => {
    const controller = new AbortController();
    setTimeout(() => controller.abort(createKillRequest()), 100);
    const r = await runBoundedProcess({ ...base, file: 'sleep', args: ['100'], signal: controller.signal });
    expect(r.killedBy).toBe('kill');
    expect(r.signal).toBe('SIGKILL');
  });

  it('a SIGTERM kill reaches the program first; it may clean up within the grace', async () => {
    const controller = new AbortController();
    const started = runBoundedProcess({
      ...base,
      file: 'sh',
      args: ['-c', 'trap "echo cleaned; exit 7" TERM; echo ready; while :; do sleep 0.05; done'],
      signal: controller.signal,
      onStdout: (c) => {
        if (text(c).includes('ready')) controller.abort(createKillRequest('SIGTERM', 5000));
      },
    });
    const r = await started;
    expect(r.killedBy).toBe('kill');
    expect(text(r.stdout)).toContain('cleaned');
    expect(r.exitCode).toBe(7);
  });

  it('a SIGINT kill of a program that ignores it ends with SIGKILL after the grace', async () => {
    const controller = new AbortController();
    const r = await runBoundedProcess({
      ...base,
      file: 'sh',
      args: ['-c', 'trap "" INT; echo ready; sleep 100'],
      signal: controller.signal,
      onStdout: () => {
        controller.abort(createKillRequest('SIGINT', 100));
      },
    });
    expect(r.killedBy).toBe('kill');
    expect(r.signal).toBe('SIGKILL');
  });

  it('a kill while the process is being started is not lost', async () => {
    const controller = new AbortController();
    const running = runBoundedProcess({ ...base, file: 'sleep', args: ['100'], signal: controller.signal });
    controller.abort(createKillRequest());
    const r = await running;
    expect(r.killedBy).toBe('kill');
    expect(r.signal).toBe('SIGKILL');
  });

  it.runIf(process.platform === 'linux')(
    'a SIGINT asked for before the program exists (only its supervisor and relays do) reaches it once it starts',
    async () => {
      // The supervisor (the root, spared) waits in a relay (`sleep`, spared) before it starts the program:
      // the interrupt comes while nothing it could reach exists, and is delivered once `tail` runs.
      for (let round = 0; round < 3; round++) {
        const controller = new AbortController();
        const running = runBoundedProcess({
          ...base,
          file: 'sh',
          args: ['-c', 'sleep 0.3; tail -f /dev/null; echo "program=$?"'],
          gracefulStop: { signal: 'SIGTERM', graceMs: 8000, relays: ['sleep'] },
          signal: controller.signal,
        });
        controller.abort(createKillRequest('SIGINT', 8000));
        const r = await running;
        expect(text(r.stdout)).toBe('program=130\n');
        expect(r.exitCode).toBe(0);
        expect(r.killedBy).toBe('kill');
      }
    },
  );

  it('an already aborted KillRequest starts nothing and says kill', async () => {
    const controller = new AbortController();
    controller.abort(createKillRequest());
    const r = await runBoundedProcess({ ...base, file: 'sleep', args: ['100'], signal: controller.signal });
    expect(r.killedBy).toBe('kill');
    expect(r.pid).toBe(0);
  });
});
