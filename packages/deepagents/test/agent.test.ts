import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createFakeDriver, FakeApprovalRequester, type FakeDriverOptions } from '@aleph/sandbox-core/testing';
import { AIMessage, type BaseMessage, ToolMessage } from '@langchain/core/messages';
import { fakeModel } from '@langchain/core/testing';
import { Command, MemorySaver } from '@langchain/langgraph';
import { createDeepAgent } from 'deepagents';
import { afterAll, describe, expect, it } from 'vitest';
import { AlephSandbox, type AlephSandboxOptions } from '../src/index.js';

const posix = process.platform !== 'win32';
const POSIX_ONLY = posix
  ? ''
  : " [skipped on Windows: the adapters run POSIX sh commands, and the fake driver's file mechanism is POSIX-only]";

const dirs: string[] = [];
const sandboxes: AlephSandbox[] = [];
afterAll(async () => {
  await Promise.all(sandboxes.map((s) => s.close()));
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

async function open(options: AlephSandboxOptions = {}, driverOptions: FakeDriverOptions = {}) {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'aleph-deepagents-'));
  dirs.push(dir);
  const driver = createFakeDriver(driverOptions);
  const sandbox = await AlephSandbox.create({
    config: { sandbox: { workspace_root: path.join(dir, 'workspaces') } },
    driver,
    ...options,
  });
  sandboxes.push(sandbox);
  return { sandbox, driver };
}

const pipOnly: AlephSandboxOptions['commandCapabilities'] = (command) =>
  command.startsWith('pip ') ? { network: { kind: 'allowHosts', hosts: ['pypi.org'] } } : undefined;

const toolMessages = (messages: BaseMessage[]) =>
  messages
    .filter((m): m is ToolMessage => ToolMessage.isInstance(m))
    .map((m) => [m.name, m.content, m.status]);

describe.runIf(posix)(`AlephSandbox under createDeepAgent with fakeModel${POSIX_ONLY}`, () => {
  it('file tools through upload/download; an elevated command interrupts, is approved, runs with what it asked', async () => {
    const requester = new FakeApprovalRequester({ outcome: 'denied', reason: 'operator says no' });
    const { sandbox, driver } = await open({ commandCapabilities: pipOnly, approvalRequester: requester });
    const file = path.join(sandbox.workspace, 'notes.txt');
    const model = fakeModel()
      .respondWithTools([
        { name: 'write_file', args: { file_path: file, content: 'hello world\n' }, id: 't1' },
      ])
      .respondWithTools([
        { name: 'edit_file', args: { file_path: file, old_string: 'world', new_string: 'there' }, id: 't2' },
      ])
      .respondWithTools([{ name: 'execute', args: { command: 'ls' }, id: 't3' }])
      .respondWithTools([{ name: 'execute', args: { command: 'pip download requests' }, id: 't4' }])
      .respond(new AIMessage('done'));
    const agent = createDeepAgent({
      model,
      backend: sandbox,
      checkpointer: new MemorySaver(),
      interruptOn: sandbox.interruptOn(),
      middleware: [sandbox.approvalMiddleware()],
    });
    const config = { configurable: { thread_id: 'approve' } };
    const first = await agent.invoke({ messages: [{ role: 'user', content: 'go' }] }, config);
    expect(readFileSync(file, 'utf8')).toBe('hello there\n');
    expect(driver.runCount).toBe(1); // ls ran without asking anyone
    const interrupt = (first as { __interrupt__?: { value: unknown }[] }).__interrupt__?.[0]?.value as {
      actionRequests: { name: string; args: unknown; description: string }[];
      reviewConfigs: { allowedDecisions: string[] }[];
    };
    expect(interrupt.actionRequests).toEqual([
      {
        name: 'execute',
        args: { command: 'pip download requests' },
        description:
          'Run in the Aleph sandbox: pip download requests\nBeyond the sandbox baseline it asks for: network access to pypi.org.',
      },
    ]);
    expect(interrupt.reviewConfigs[0]?.allowedDecisions).toEqual(['approve', 'reject']);

    const second = await agent.invoke(new Command({ resume: { decisions: [{ type: 'approve' }] } }), config);
    expect(driver.runCount).toBe(2);
    expect(driver.requests[1]?.capabilities.network).toEqual({ kind: 'allowHosts', hosts: ['pypi.org'] });
    expect(requester.requests).toEqual([]);
    expect(toolMessages(second.messages).slice(-2)).toEqual([
      ['execute', '\n[Command succeeded with exit code 0]', 'success'],
      ['execute', '\n[Command succeeded with exit code 0]', 'success'],
    ]);
  });

  it('a rejected command never runs; the model reads the rejection', async () => {
    const { sandbox, driver } = await open({ commandCapabilities: pipOnly });
    const model = fakeModel()
      .respondWithTools([{ name: 'execute', args: { command: 'pip install evil' }, id: 'r1' }])
      .respond(new AIMessage('ok'));
    const agent = createDeepAgent({
      model,
      backend: sandbox,
      checkpointer: new MemorySaver(),
      interruptOn: sandbox.interruptOn(),
      middleware: [sandbox.approvalMiddleware()],
    });
    const config = { configurable: { thread_id: 'reject' } };
    await agent.invoke({ messages: [{ role: 'user', content: 'go' }] }, config);
    const done = await agent.invoke(
      new Command({ resume: { decisions: [{ type: 'reject', message: 'no network today' }] } }),
      config,
    );
    expect(toolMessages(done.messages)).toEqual([['execute', 'no network today', 'error']]);
    expect(driver.runCount).toBe(0);
  });

  it('without the approval middleware, an approved call is not granted anything: the requester decides', async () => {
    const requester = new FakeApprovalRequester({ outcome: 'denied', reason: 'operator says no' });
    const { sandbox, driver } = await open({ commandCapabilities: pipOnly, approvalRequester: requester });
    const model = fakeModel()
      .respondWithTools([{ name: 'execute', args: { command: 'pip install x' }, id: 'n1' }])
      .respond(new AIMessage('ok'));
    const agent = createDeepAgent({
      model,
      backend: sandbox,
      checkpointer: new MemorySaver(),
      interruptOn: sandbox.interruptOn(),
    });
    const config = { configurable: { thread_id: 'no-middleware' } };
    await agent.invoke({ messages: [{ role: 'user', content: 'go' }] }, config);
    const done = await agent.invoke(new Command({ resume: { decisions: [{ type: 'approve' }] } }), config);
    expect(requester.requests).toHaveLength(1);
    expect(driver.runCount).toBe(0);
    const [[, content]] = toolMessages(done.messages) as [[string, string, string]];
    expect(content).toMatch(
      /^aleph-sandbox: ALEPH_CAPABILITY_DENIED: capability denied: approval denied \(operator says no\) for network access to pypi\.org\..*\n\[Command failed with exit code 126\]$/s,
    );
  });

  it('aborting the agent run kills the running command', async () => {
    const { sandbox, driver } = await open({}, { runMs: Number.POSITIVE_INFINITY });
    const model = fakeModel()
      .respondWithTools([{ name: 'execute', args: { command: 'sleep 1000' }, id: 'a1' }])
      .respond(new AIMessage('never'));
    const agent = createDeepAgent({ model, backend: sandbox });
    const controller = new AbortController();
    const running = agent.invoke(
      { messages: [{ role: 'user', content: 'go' }] },
      { signal: controller.signal },
    );
    for (let i = 0; i < 200 && driver.runCount === 0; i++) await new Promise((r) => setTimeout(r, 10));
    controller.abort(new Error('user pressed stop'));
    await expect(running).rejects.toThrow();
    const signal = driver.requests[0]?.signal;
    for (let i = 0; i < 200 && signal?.aborted !== true; i++) await new Promise((r) => setTimeout(r, 10));
    expect(signal?.aborted).toBe(true);
  });
});
