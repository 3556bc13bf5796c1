import { PassThrough } from 'node:stream';
import { type ApprovalRequest, strictCapabilities } from '@aleph/sandbox-core';
import { describe, expect, it } from 'vitest';
import {
  createCallbackApprovalRequester,
  createTtyApprovalRequester,
  denyAllApprovalRequester,
  describeElevation,
} from '../src/index.js';

const request: ApprovalRequest = {
  sessionId: 'chat-1',
  program: 'curl',
  args: ['-s', 'https://pypi.org/simple/'],
  cwd: '/ws',
  requested: {
    ...strictCapabilities(),
    network: { kind: 'allowHosts', hosts: ['pypi.org'] },
    spawnSubprocess: true,
  },
  baseline: strictCapabilities(),
  reasons: ['network access to pypi.org', 'permission to spawn subprocesses'],
};
const signal = new AbortController().signal;

describe('describeElevation', () => {
  it('shows the command and each excess as a + line', () => {
    expect(describeElevation(request)).toBe(
      'approval needed to run: curl -s https://pypi.org/simple/\n  session chat-1, in /ws\n  beyond the baseline it asks for:\n  + network access to pypi.org\n  + permission to spawn subprocesses',
    );
  });
});

describe('createTtyApprovalRequester', () => {
  const ask = async (answer: string) => {
    const input = new PassThrough();
    const output = new PassThrough();
    let shown = '';
    output.on('data', (c) => {
      shown += c;
    });
    const requester = createTtyApprovalRequester({ input, output });
    const pending = requester.requestApproval(request, { signal });
    input.write(`${answer}\n`);
    const outcome = await pending;
    return { outcome, shown };
  };
  it.each([
    ['o', { outcome: 'approved', scope: 'once' }],
    ['once', { outcome: 'approved', scope: 'once' }],
    ['s', { outcome: 'approved', scope: 'session' }],
    ['d', { outcome: 'denied', reason: 'denied at the prompt' }],
    ['', { outcome: 'denied', reason: 'denied at the prompt' }],
  ])('answer %j → %j', async (answer, expected) => {
    const { outcome, shown } = await ask(answer);
    expect(outcome).toEqual(expected);
    expect(shown).toContain('+ network access to pypi.org');
    expect(shown).toContain('[o]nce, for this [s]ession, [d]eny');
  });

  it('gives up when the gate aborts (timeout)', async () => {
    const controller = new AbortController();
    const requester = createTtyApprovalRequester({ input: new PassThrough(), output: new PassThrough() });
    const pending = requester.requestApproval(request, { signal: controller.signal });
    controller.abort(new Error('approval timed out'));
    await expect(pending).rejects.toThrow(/timed out/);
  });
});

describe('callback and deny-all requesters', () => {
  it.each([
    [true, { outcome: 'approved', scope: 'session' }],
    ['session', { outcome: 'approved', scope: 'session' }],
    ['once', { outcome: 'approved', scope: 'once' }],
    [false, { outcome: 'denied', reason: 'denied by the approval callback' }],
    ['deny', { outcome: 'denied', reason: 'denied by the approval callback' }],
    [{ outcome: 'timeout' }, { outcome: 'timeout' }],
  ] as const)('callback answer %j', async (answer, expected) => {
    expect(await createCallbackApprovalRequester(() => answer).requestApproval(request, { signal })).toEqual(
      expected,
    );
  });
  it('deny-all denies with a hint', async () => {
    expect((await denyAllApprovalRequester.requestApproval(request, { signal })).outcome).toBe('denied');
  });
});
