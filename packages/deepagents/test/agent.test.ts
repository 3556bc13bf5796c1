import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createFakeDriver, FakeApprovalRequester, type FakeDriverOptions } from '@aleph/sandbox-core/testing';
import { AIMessage, type BaseMessage, ToolMessage } from '@langchain/core/messages';
import { fakeModel } from '@langchain/core/testing';
import { Command, MemorySaver } from '@langchain/langgraph';
import { createDeepAgent } from 'deepagents';
import { tool } from 'langchain';
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

/** A tool message's content as text (read_file answers with text blocks). */
const text = (content: unknown) =>
  typeof content === 'string' ? content : (content as { text?: string }[]).map((c) => c.text ?? '').join('');

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
  it("a large result is kept in the agent's state: the model reads the notice with its preview, then reads it back", async () => {
    const seq = `${Array.from({ length: 30000 }, (_, i) => i + 1).join('\n')}\n`;
    const { sandbox } = await open({}, { output: { stdout: new TextEncoder().encode(seq), exitCode: 0 } });
    const before = readdirSync(sandbox.workspace);
    const model = fakeModel()
      .respondWithTools([{ name: 'execute', args: { command: 'seq 1 30000' }, id: 'big1' }])
      .respondWithTools([
        {
          name: 'read_file',
          args: { file_path: '/large_tool_results/big1.txt', offset: 100, limit: 3 },
          id: 'rb1',
        },
      ])
      .respondWithTools([{ name: 'ls', args: { path: '/large_tool_results' }, id: 'lb1' }])
      .respond(new AIMessage('done'));
    const agent = createDeepAgent({ model, backend: sandbox });
    const result = await agent.invoke({ messages: [{ role: 'user', content: 'go' }] });
    const [notice, readBack, listed] = toolMessages(result.messages).map(([, content]) => text(content));
    expect(notice).toMatch(
      /^Tool result too large, the result of this tool call big1 was saved in the filesystem at this path: \/large_tool_results\/big1\.txt\n/,
    );
    expect(notice).toMatch(
      /\n {5}1\t1\n(.|\n)*\n\.\.\. \[29992 lines truncated\] \.\.\.\n(.|\n)* 30000\t30000\n/,
    ); // head and tail
    expect(notice).not.toContain('permission_denied');
    expect(readBack).toBe('@@ lines 101-103 of 30002 | next offset 103 @@\n101\n102\n103');
    expect(listed).toContain('/large_tool_results/big1.txt');
    // Kept in the agent's state: nothing in the workspace, nothing outside an agent run.
    expect(readdirSync(sandbox.workspace)).toEqual(before);
    expect((await sandbox.read('/large_tool_results/big1.txt')).error).toMatch(
      /reachable only while an agent runs/,
    );
  });
  it("conversation history offloads (upload/download in one batch with workspace files) stay in the agent's state", async () => {
    const { sandbox } = await open();
    const history = '/conversation_history/t1.md';
    const notes = path.join(sandbox.workspace, 'notes.txt');
    // What summarization does through the backend, from inside the agent's run (a tool of the agent).
    const offload = tool(
      async () => {
        const up = await sandbox.uploadFiles([
          [notes, new TextEncoder().encode('mine\n')],
          [history, new TextEncoder().encode('## Summarized\nearlier turns\n')],
        ]);
        const down = await sandbox.downloadFiles([history, notes]);
        return JSON.stringify([
          up,
          down.map((d) => [d.path, d.error, new TextDecoder().decode(d.content ?? undefined)]),
        ]);
      },
      { name: 'offload', description: 'offload', schema: { type: 'object', properties: {} } },
    );
    const model = fakeModel()
      .respondWithTools([{ name: 'offload', args: {}, id: 'o1' }])
      .respondWithTools([{ name: 'read_file', args: { file_path: history }, id: 'h1' }])
      .respond(new AIMessage('done'));
    const result = await createDeepAgent({ model, backend: sandbox, tools: [offload] }).invoke({
      messages: [{ role: 'user', content: 'go' }],
    });
    const [offloaded = '', readBack] = toolMessages(result.messages).map(([, content]) => text(content));
    expect(JSON.parse(offloaded)).toEqual([
      [
        { path: notes, error: null },
        { path: history, error: null },
      ],
      [
        [history, null, '## Summarized\nearlier turns\n'],
        [notes, null, 'mine\n'],
      ],
    ]);
    expect(readBack).toBe('@@ lines 1-2 of 2 @@\n## Summarized\nearlier turns');
    expect(readFileSync(notes, 'utf8')).toBe('mine\n');
    expect(readdirSync(sandbox.workspace)).toEqual(['notes.txt']);
  });
});
