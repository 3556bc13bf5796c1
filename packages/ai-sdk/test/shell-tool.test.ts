import { anthropic } from '@ai-sdk/anthropic';
import { FakeApprovalRequester } from '@aleph/sandbox-core/testing';
import { generateText, type ModelMessage, stepCountIs } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';
import { describe, expect, it } from 'vitest';
import { alephShellApproval, createAlephShellTool } from '../src/index.js';
import { enc, fakeSession } from './helpers.js';

const posix = process.platform !== 'win32';
const POSIX_ONLY = posix
  ? ''
  : " [skipped on Windows: the adapters run POSIX sh commands, and the fake driver's file mechanism is POSIX-only]";

// A scripted model: each call answers with the next turn, and records the tool results it was given.
const usage = {
  inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 1, text: 1, reasoning: 0 },
};
type Part =
  | { type: 'tool-call'; toolCallId: string; toolName: string; input: string }
  | { type: 'text'; text: string };
const call = (toolCallId: string, toolName: string, input: unknown): Part => ({
  type: 'tool-call',
  toolCallId,
  toolName,
  input: JSON.stringify(input),
});
const turn = (...content: Part[]) => ({
  content,
  finishReason: {
    unified: content.some((c) => c.type === 'tool-call') ? 'tool-calls' : 'stop',
    raw: undefined,
  },
  usage,
  warnings: [],
});

function scriptedModel(script: ReturnType<typeof turn>[]) {
  const seen: unknown[] = [];
  let i = 0;
  const model = new MockLanguageModelV4({
    doGenerate: async (options) => {
      const last = options.prompt.at(-1);
      if (last?.role === 'tool') {
        for (const part of last.content) if (part.type === 'tool-result') seen.push(part.output);
      }
      const next = script[i++];
      if (next === undefined) throw new Error('the script is exhausted');
      return next as never;
    },
  });
  return { model, seen };
}

describe.runIf(posix)(`createAlephShellTool in an AI SDK loop${POSIX_ONLY}`, () => {
  it('runs within the baseline at once; an elevation waits for approval, then runs with exactly what it asked', async () => {
    const requester = new FakeApprovalRequester({
      outcome: 'denied',
      reason: 'the sandbox requester says no',
    });
    const { session, driver } = await fakeSession(
      { approvalRequester: requester },
      { output: { exitCode: 0, stdout: enc('done\n') } },
    );
    const tools = { shell: createAlephShellTool(session) };
    const { model, seen } = scriptedModel([
      turn(call('c1', 'shell', { command: 'ls' })),
      turn(call('c2', 'shell', { command: 'pip download x', capabilities: { hosts: ['pypi.org'] } })),
      turn({ type: 'text', text: 'all done' }),
    ]);
    const common = {
      model,
      tools,
      experimental_sandbox: session,
      toolApproval: { shell: alephShellApproval(session) },
      stopWhen: stepCountIs(5),
    };
    const messages: ModelMessage[] = [{ role: 'user', content: 'go' }];
    const first = await generateText({ ...common, messages });
    expect(first.finishReason).toBe('tool-calls');
    expect(seen[0]).toEqual({ type: 'json', value: { exitCode: 0, stdout: 'done\n', stderr: '' } });
    const request = first.content.find((c) => c.type === 'tool-approval-request');
    expect(request).toMatchObject({ reason: 'The command asks for network access to pypi.org' });
    expect(driver.runCount).toBe(1);

    const second = await generateText({
      ...common,
      messages: [
        ...messages,
        ...first.responseMessages,
        {
          role: 'tool',
          content: [{ type: 'tool-approval-response', approvalId: request!.approvalId, approved: true }],
        },
      ],
    });
    expect(second.text).toBe('all done');
    expect(driver.runCount).toBe(2);
    expect(driver.requests[1]?.capabilities.network).toEqual({ kind: 'allowHosts', hosts: ['pypi.org'] });
    expect(requester.requests).toEqual([]);
    expect(seen[1]).toEqual({ type: 'json', value: { exitCode: 0, stdout: 'done\n', stderr: '' } });
  });

  it('a denied approval reaches the model as execution-denied; nothing ran, nothing was granted', async () => {
    const { session, driver } = await fakeSession();
    const tools = { shell: createAlephShellTool(session) };
    const { model, seen } = scriptedModel([
      turn(call('c1', 'shell', { command: 'cat /etc/hosts', capabilities: { readPaths: ['/etc/hosts'] } })),
      turn({ type: 'text', text: 'ok' }),
    ]);
    const common = { model, tools, experimental_sandbox: session, stopWhen: stepCountIs(5) };
    const first = await generateText({ ...common, prompt: 'go' });
    // The tool's own needsApproval asks, with no toolApproval configured.
    const request = first.content.find((c) => c.type === 'tool-approval-request');
    expect(request).toBeDefined();
    await generateText({
      ...common,
      messages: [
        { role: 'user', content: 'go' },
        ...first.responseMessages,
        {
          role: 'tool',
          content: [
            {
              type: 'tool-approval-response',
              approvalId: request!.approvalId,
              approved: false,
              reason: 'not today',
            },
          ],
        },
      ],
    });
    expect(seen).toEqual([{ type: 'execution-denied', reason: 'not today' }]);
    expect(driver.runCount).toBe(0);
  });

  it("a call let through without the user's approval goes to the sandbox's requester, whose denial is a result", async () => {
    const requester = new FakeApprovalRequester([
      { outcome: 'denied', reason: 'the operator says no' },
      { outcome: 'approved', scope: 'once' },
    ]);
    const { session, driver } = await fakeSession({ approvalRequester: requester });
    const tools = { shell: createAlephShellTool(session) };
    const ask = { command: 'curl https://pypi.org', capabilities: { hosts: ['pypi.org'] } };
    const { model, seen } = scriptedModel([
      turn(call('c1', 'shell', ask)),
      turn(call('c2', 'shell', ask)),
      turn({ type: 'text', text: 'ok' }),
    ]);
    // The user's configuration marks the shell tool as needing no approval (or approves it automatically):
    // no person approved these calls, so the sandbox's own requester is asked.
    await generateText({
      model,
      tools,
      toolApproval: { shell: 'not-applicable' },
      stopWhen: stepCountIs(5),
      prompt: 'go',
    });
    expect(requester.requests.map((r) => r.reasons)).toEqual([
      ['network access to pypi.org'],
      ['network access to pypi.org'],
    ]);
    expect(seen[0]).toMatchObject({
      type: 'json',
      value: {
        exitCode: 126,
        stderr: expect.stringMatching(
          /^aleph-sandbox: ALEPH_CAPABILITY_DENIED: capability denied: approval denied \(the operator says no\) for network access to pypi\.org\. A command that needs more/,
        ),
      },
    });
    expect(seen[1]).toMatchObject({ type: 'json', value: { exitCode: 0 } });
    expect(driver.runCount).toBe(1);
    expect(driver.requests[0]?.capabilities.network).toEqual({ kind: 'allowHosts', hosts: ['pypi.org'] });
  });

  it('a refusal by the command policy is a result with exit 126 and the reason; the loop goes on', async () => {
    const { session } = await fakeSession();
    const { model, seen } = scriptedModel([
      turn(call('c1', 'shell', { command: 'rm -rf /' })),
      turn({ type: 'text', text: 'ok' }),
    ]);
    const result = await generateText({
      model,
      tools: { shell: createAlephShellTool(session) },
      stopWhen: stepCountIs(5),
      prompt: 'go',
    });
    expect(result.text).toBe('ok');
    expect(seen[0]).toMatchObject({
      type: 'json',
      value: {
        exitCode: 126,
        stdout: '',
        stderr: expect.stringMatching(/^aleph-sandbox: ALEPH_POLICY_DENIED: /),
      },
    });
  });

  it("the sandbox's refusals during a run reach the model: denials in the result and each in stderr with what would allow it", async () => {
    const denial = {
      kind: 'network.host',
      target: 'evil.test:443',
      reason: 'evil.test is not on the allowlist',
      allowWith: 'add "evil.test" to the allowed hosts: aleph-sandbox run --net api.test,evil.test',
    };
    const { session } = await fakeSession(
      {},
      { output: { exitCode: 22, stderr: enc('curl: (22) 403\n'), details: { denials: [denial] } } },
    );
    const { model, seen } = scriptedModel([
      turn(call('c1', 'shell', { command: 'curl -f https://evil.test/' })),
      turn({ type: 'text', text: 'ok' }),
    ]);
    await generateText({
      model,
      tools: { shell: createAlephShellTool(session) },
      stopWhen: stepCountIs(5),
      prompt: 'go',
    });
    expect(seen[0]).toEqual({
      type: 'json',
      value: {
        exitCode: 22,
        stdout: '',
        stderr:
          'curl: (22) 403\naleph-sandbox: denied network.host evil.test:443 (evil.test is not on the allowlist); allowed with add "evil.test" to the allowed hosts: aleph-sandbox run --net api.test,evil.test\n',
        denials: [denial],
      },
    });
  });

  it('a timeout is a result: exit 124, timedOut, and the note; the timeout asked for is passed on', async () => {
    const { session, driver } = await fakeSession({}, { runMs: Number.POSITIVE_INFINITY });
    const { model, seen } = scriptedModel([
      turn(call('c1', 'shell', { command: 'sleep 100', timeoutSeconds: 0.2 })),
      turn({ type: 'text', text: 'ok' }),
    ]);
    await generateText({
      model,
      tools: { shell: createAlephShellTool(session) },
      stopWhen: stepCountIs(5),
      prompt: 'go',
    });
    expect(driver.requests[0]?.timeoutMs).toBe(200);
    expect(seen[0]).toEqual({
      type: 'json',
      value: {
        exitCode: 124,
        stdout: '',
        stderr: 'aleph-sandbox: timed out after 0.2 s; every process of the command was killed\n',
        timedOut: true,
      },
    });
  });

  it("the Anthropic bash tool's default executor runs through the session's run()", async () => {
    const { session, driver } = await fakeSession({}, { output: { exitCode: 0, stdout: enc('Linux\n') } });
    const { model, seen } = scriptedModel([
      turn(call('b1', 'bash', { command: 'uname -s' })),
      turn({ type: 'text', text: 'ok' }),
    ]);
    await generateText({
      model,
      tools: { bash: anthropic.tools.bash_20250124() },
      experimental_sandbox: session,
      stopWhen: stepCountIs(5),
      prompt: 'go',
    });
    expect(driver.requests[0]?.args).toEqual(['-c', 'uname -s']);
    expect(seen[0]).toEqual({ type: 'json', value: { exitCode: 0, stdout: 'Linux\n', stderr: '' } });
  });

  it('refuses a session that is not an Aleph one, saying which to pass', () => {
    expect(() => createAlephShellTool({} as never)).toThrow(/not an Aleph sandbox session; pass the session/);
  });
});
