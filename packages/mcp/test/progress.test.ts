import type { DriverRunRequest } from '@aleph/sandbox-core';
import { ErrorCode, McpError, type Progress } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { ProgressReporter } from '../src/tools/progress.js';
import { connect, encode } from './connect.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A fake command that prints a line every 300 ms, three times (the fake keeps only its canned output). */
async function threeLines(request: DriverRunRequest) {
  for (const n of [1, 2, 3]) {
    await request.onStdout?.(encode(`line ${n}\n`));
    await sleep(300);
  }
  return { exitCode: 0, stdout: encode('kept\n') };
}

describe('progress and cancellation', () => {
  it('streams the output as progress notifications when the client asks for progress', async () => {
    const { client, driver } = await connect({ driver: { output: threeLines } });
    const seen: Progress[] = [];
    const r = await client.callTool({ name: 'execute', arguments: { argv: ['talk'] } }, undefined, {
      onprogress: (p) => seen.push(p),
    });
    expect(r.structuredContent).toMatchObject({ status: 'completed', stdout: 'kept\n' });
    // The last one may race the result (it is never relied on); the first ones arrive.
    expect(seen.length).toBeGreaterThanOrEqual(2);
    expect(seen.map((p) => p.progress)).toEqual(seen.map((_, i) => i + 1));
    // Each message is the output so far.
    expect(seen[0]?.message).toBe('line 1\n');
    expect(seen[1]?.message).toBe('line 1\nline 2\n');
    expect(driver.requests[0]?.onStdout).toBeTypeOf('function');
  });

  it('stdin is text with a progress token too: "pipe" is given to the command, not an open pipe', async () => {
    // The fake's command echoes the stdin it was given whole (a stream it would wait on until the timeout).
    const echo = (request: DriverRunRequest) => ({
      exitCode: 0,
      stdout: typeof request.stdin === 'string' ? encode(request.stdin) : (request.stdin as Uint8Array),
    });
    const { client, driver } = await connect({ driver: { output: echo } });
    const r = await client.callTool(
      { name: 'execute', arguments: { argv: ['cat'], stdin: 'pipe', timeoutSeconds: 5 } },
      undefined,
      { onprogress: () => {} },
    );
    expect(r.structuredContent).toMatchObject({ status: 'completed', stdout: 'pipe' });
    expect(driver.requests[0]?.onStdout).toBeTypeOf('function');
  });

  it('without a progress token the command runs buffered (no streams)', async () => {
    const { call, driver } = await connect({ driver: { output: threeLines } });
    const r = await call('execute', { argv: ['talk'] });
    expect(r.structuredContent).toMatchObject({ stdout: 'kept\n' });
    expect(driver.requests[0]?.onStdout).toBeUndefined();
  });

  it('a cancelled call kills the command (its signal aborts), gets no answer, and the server keeps serving', async () => {
    const { client, driver, call } = await connect({ driver: { runMs: Number.POSITIVE_INFINITY } });
    const controller = new AbortController();
    const pending = client.callTool({ name: 'execute', arguments: { argv: ['sleep', '600'] } }, undefined, {
      signal: controller.signal,
      onprogress: () => {},
    });
    while (driver.runCount === 0) await sleep(10);
    controller.abort('user pressed stop');
    const error = await pending.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(McpError);
    expect((error as McpError).code).toBe(ErrorCode.RequestTimeout);
    const signal = driver.requests[0]?.signal;
    expect(signal?.aborted).toBe(true);
    const second = await call('execute', { argv: ['true'], timeoutSeconds: 0.05 });
    expect(second.structuredContent).toMatchObject({ status: 'timedOut' });
  });

  it('a client that disconnects mid-command: the command is killed and close() finishes', async () => {
    const { client, driver, app } = await connect({ driver: { runMs: Number.POSITIVE_INFINITY } });
    const pending = client
      .callTool({ name: 'execute', arguments: { argv: ['sleep', '600'] } })
      .catch((e) => e);
    while (driver.runCount === 0) await sleep(10);
    await client.close();
    expect(await pending).toBeInstanceOf(McpError);
    await app.close();
    expect(driver.requests[0]?.signal?.aborted).toBe(true);
    expect(driver.disposed).toBe(true);
  });

  it('a message is the last 8 KiB of the output so far, marked as cut; quiet, it says how long it has run', async () => {
    const sent: { progress: number; message?: string }[] = [];
    const reporter = new ProgressReporter({
      token: 't',
      sendNotification: async (n) => {
        sent.push(n.params as { progress: number; message?: string });
      },
    });
    reporter.push(encode('a'.repeat(20_000)));
    reporter.push(encode('END'));
    while (sent.length === 0) await sleep(10);
    await reporter.stop();
    expect(sent).toHaveLength(1);
    expect(sent[0]?.message).toBe(`…${'a'.repeat(8 * 1024 - 3)}END`);
  });
});
