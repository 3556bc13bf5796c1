import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { connect, textOf } from './connect.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// A shell command asks for subprocesses, which the default baseline does not allow: approval is needed.
const SHELL = { command: 'echo hi | tr a-z A-Z', reason: 'to upper-case a greeting' };

describe('approval through the client', () => {
  it('asks through elicitation: what, why, for how long; accepting once runs it and asks again next time', async () => {
    const { call, asked, driver } = await connect({
      elicit: () => ({ action: 'accept', content: { duration: 'once' } }),
    });
    const r = await call('execute', SHELL);
    expect(r.structuredContent).toMatchObject({ status: 'completed', exitCode: 0 });
    expect(driver.requests[0]).toMatchObject({ program: '/bin/sh', args: ['-c', SHELL.command] });
    expect(driver.requests[0]?.capabilities.spawnSubprocess).toBe(true);
    expect(asked).toHaveLength(1);
    expect(asked[0]?.message).toContain('approval needed to run: /bin/sh -c "echo hi | tr a-z A-Z"');
    expect(asked[0]?.message).toContain('+ permission to spawn subprocesses');
    expect(asked[0]?.message).toContain("why (the agent's words): to upper-case a greeting");
    expect(asked[0]).toMatchObject({
      mode: 'form',
      requestedSchema: { properties: { duration: { enum: ['once', 'session'] } }, required: ['duration'] },
    });
    await call('execute', SHELL);
    expect(asked).toHaveLength(2);
  });

  it('a client that declares elicitation as {} (the 2025-06-18 way: form only) is asked too', async () => {
    const { call, asked } = await connect({
      elicitation: {},
      elicit: () => ({ action: 'accept', content: { duration: 'once' } }),
    });
    expect((await call('execute', SHELL)).structuredContent).toMatchObject({ status: 'completed' });
    expect(asked).toHaveLength(1);
  });

  it('a client that declares only URL elicitation cannot show the form: not asked, told how to allow it', async () => {
    const { call, asked, driver } = await connect({
      elicitation: { url: {} },
      elicit: () => ({ action: 'accept', content: { duration: 'once' } }),
    });
    const r = await call('execute', SHELL);
    expect(asked).toHaveLength(0);
    expect(driver.runCount).toBe(0);
    expect(r.structuredContent).toMatchObject({ status: 'denied', error: { approval: 'unavailable' } });
  });

  it('accepting for the session caches the grant: the same or a narrower request is not asked again', async () => {
    const { call, asked, driver } = await connect({
      elicit: () => ({ action: 'accept', content: { duration: 'session' } }),
    });
    await call('execute', SHELL);
    await call('execute', { command: 'ls' });
    await call('execute', { argv: ['ls'], capabilities: { spawn: true } });
    expect(asked).toHaveLength(1);
    expect(driver.runCount).toBe(3);
    // Another session of the same connection has its own grants.
    await call('execute', { ...SHELL, session: 'other' });
    expect(asked).toHaveLength(2);
  });

  it('declining or dismissing refuses: a denied result with what would allow it, nothing run', async () => {
    for (const action of ['decline', 'cancel'] as const) {
      const { call, driver, asked } = await connect({ elicit: () => ({ action }) });
      const r = await call('execute', SHELL);
      expect(asked).toHaveLength(1);
      expect(driver.runCount).toBe(0);
      expect(r.isError).toBe(true);
      expect(r.structuredContent).toMatchObject({
        status: 'denied',
        error: { code: 'ALEPH_CAPABILITY_DENIED', approval: action === 'decline' ? 'declined' : 'cancelled' },
        denials: [{ kind: 'capability.spawn', target: 'subprocesses' }],
      });
      expect(textOf(r)).toContain('start the server with: --allow-spawn');
    }
  });

  it('a client without elicitation gets the flag and the config line that would allow it; nothing is granted', async () => {
    const { call, driver } = await connect();
    const r = await call('execute', {
      ...SHELL,
      capabilities: { network: ['registry.npmjs.org'], read: ['/opt/data'] },
    });
    expect(driver.runCount).toBe(0);
    expect(r.structuredContent).toMatchObject({ status: 'denied', error: { approval: 'unavailable' } });
    const denials = (r.structuredContent as { denials: { kind: string; allowWith: string }[] }).denials;
    expect(denials.map((d) => d.kind)).toEqual([
      'capability.fs-read',
      'capability.network',
      'capability.spawn',
    ]);
    expect(denials[0]?.allowWith).toBe(
      '--allow-read /opt/data, or fs_read = ["/opt/data"] under [sandbox.baseline] in the config',
    );
    const text = textOf(r);
    expect(text).toContain('This MCP client cannot ask you (it does not support elicitation)');
    expect(text).toContain(
      'start the server with: --allow-read /opt/data --net registry.npmjs.org --allow-spawn',
    );
    expect(text).toContain('[sandbox.baseline]\n    fs_read = ["/opt/data"]\n    spawn_subprocess = true');
    expect(text).toContain('[sandbox.network]\n    allow = ["registry.npmjs.org"]');
  });

  it('--approve none refuses without asking; --approve all allows without asking', async () => {
    const off = await connect({ server: { approve: 'none' }, elicit: () => ({ action: 'accept' }) });
    const r = await off.call('execute', SHELL);
    expect(off.asked).toHaveLength(0);
    expect(r.structuredContent).toMatchObject({ status: 'denied', error: { approval: 'off' } });
    expect(textOf(r)).toContain('Approvals are off (--approve none)');
    const all = await connect({ server: { approve: 'all' }, elicit: () => ({ action: 'decline' }) });
    expect((await all.call('execute', SHELL)).structuredContent).toMatchObject({ status: 'completed' });
    expect(all.asked).toHaveLength(0);
  });

  it('the flag grants are the baseline and every command gets them: no question', async () => {
    const { call, asked, driver } = await connect({
      server: { grants: { spawnSubprocess: true, network: { kind: 'allowHosts', hosts: ['example.com'] } } },
      elicit: () => ({ action: 'decline' }),
    });
    expect((await call('execute', SHELL)).structuredContent).toMatchObject({ status: 'completed' });
    expect(driver.requests[0]?.capabilities.network).toEqual({ kind: 'allowHosts', hosts: ['example.com'] });
    const more = await call('execute', { argv: ['curl', 'x'], capabilities: { network: ['other.example'] } });
    expect(asked).toHaveLength(1);
    expect(textOf(more)).toContain('--net example.com,other.example');
  });

  it('a cancelled call withdraws its question (the client is told), nothing runs, and the server keeps serving', async () => {
    let question: AbortSignal | undefined;
    const { client, asked, driver, call } = await connect({
      elicit: (_params, signal) => {
        question = signal;
        return new Promise<never>(() => {});
      },
    });
    const controller = new AbortController();
    const pending = client
      .callTool({ name: 'execute', arguments: SHELL }, undefined, { signal: controller.signal })
      .catch((e: unknown) => e);
    while (asked.length === 0) await sleep(10);
    expect(question?.aborted).toBe(false);
    controller.abort('user pressed stop');
    expect(await pending).toBeInstanceOf(McpError);
    while (question?.aborted !== true) await sleep(10);
    expect(driver.runCount).toBe(0);
    expect((await call('execute', { argv: ['true'] })).structuredContent).toMatchObject({
      status: 'completed',
    });
  });

  it('an approval the user does not answer in time is refused, saying so', async () => {
    const { call } = await connect({
      config: { approval: { timeout_seconds: 0.2 } },
      elicit: () => new Promise(() => {}),
    });
    const r = await call('execute', SHELL);
    expect(r.structuredContent).toMatchObject({ status: 'denied', error: { approval: 'timeout' } });
    expect(textOf(r)).toContain('Nobody answered in time');
  });
});

describe('memory', () => {
  it('--memory is what every command gets, and it raises a lower memory ceiling of the config', async () => {
    const { call, driver, asked } = await connect({
      config: { baseline: { max_memory_mb: 256 } },
      server: { grants: { maxMemoryMb: 512 } },
      elicit: () => ({ action: 'decline' }),
    });
    expect((await call('execute', { argv: ['true'] })).structuredContent).toMatchObject({
      status: 'completed',
    });
    expect(driver.requests[0]?.capabilities.maxMemoryMb).toBe(512);
    expect(asked).toHaveLength(0);
  });

  it("without --memory, commands ask for the config's ceiling, so they run without asking", async () => {
    const { call, driver } = await connect({ config: { baseline: { max_memory_mb: 256 } } });
    expect((await call('execute', { argv: ['true'] })).structuredContent).toMatchObject({
      status: 'completed',
    });
    expect(driver.requests[0]?.capabilities.maxMemoryMb).toBe(256);
  });
});
