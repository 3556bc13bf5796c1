import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import type { ApprovalRequest } from '@aleph/sandbox-core';
import { Runner, RunState, setTracingDisabled } from '@openai/agents';
import { filesystem, SandboxAgent, shell } from '@openai/agents/sandbox';
import { assistantMessage, functionCall, ScriptedModel } from '@openai/agents/testing';
import { describe, expect, it } from 'vitest';
import { AlephSandboxClient, alephShell } from '../src/index.js';
import { createPlainDriver, tempDirs, testOptions } from './plain-driver.js';

setTracingDisabled(true);
const tempDir = tempDirs();

/** Every tool result the model was given, by call id. */
function seen(model: ScriptedModel): Record<string, string> {
  const out: Record<string, string> = {};
  for (const call of model.calls) {
    for (const item of call.request.input as {
      type: string;
      callId?: string;
      output?: unknown;
      status?: string;
    }[]) {
      if (item.type === 'function_call_result')
        out[item.callId as string] = (item.output as { text: string }).text;
      if (item.type === 'apply_patch_call_output')
        out[item.callId as string] = `${item.status}: ${item.output ?? ''}`;
    }
  }
  return out;
}

function setup(capabilities = [filesystem(), alephShell()]) {
  const base = tempDir();
  const asked: ApprovalRequest[] = [];
  const driver = createPlainDriver();
  const client = new AlephSandboxClient({
    ...testOptions(base, driver),
    approvalRequester: {
      async requestApproval(request) {
        asked.push(request);
        return { outcome: 'denied', reason: 'the test requester denies' };
      },
    },
  });
  const outside = path.join(base, 'outside');
  mkdirSync(outside);
  return { base, asked, driver, client, outside, capabilities };
}

describe('a SandboxAgent run with AlephSandboxClient', () => {
  it("the model's tools: exec_command with capabilities, write_stdin, apply_patch; instructions name the workspace", async () => {
    const { client } = setup();
    const model = new ScriptedModel([[assistantMessage('ok')]]);
    const agent = new SandboxAgent({
      name: 'a',
      instructions: 'x',
      model,
      capabilities: [filesystem(), alephShell()],
    });
    await new Runner().run(agent, 'go', { sandbox: { client } });
    const tools = model.firstCall?.request.tools.map((t) => `${t.type}:${t.name}`);
    expect(tools?.sort()).toEqual([
      'apply_patch:apply_patch',
      'function:exec_command',
      'function:view_image',
      'function:write_stdin',
    ]);
    const exec = model.firstCall?.request.tools.find((t) => t.name === 'exec_command') as {
      parameters: { properties: Record<string, unknown> };
    };
    expect(Object.keys(exec.parameters.properties)).toContain('capabilities');
    expect(model.firstCall?.request.systemInstructions).toMatch(
      /Commands start in the workspace, `\/workspace`/,
    );
  });

  it('a call within the baseline runs at once; one asking for more interrupts the run for approval', async () => {
    const { client, asked, driver, outside } = setup();
    const model = new ScriptedModel([
      [functionCall('exec_command', { cmd: 'echo inside', login: false }, { callId: 'c1' })],
      [
        functionCall(
          'exec_command',
          { cmd: `echo yes > ${outside}/ok.txt`, login: false, capabilities: { write_paths: [outside] } },
          { callId: 'c2' },
        ),
      ],
      [
        functionCall(
          'exec_command',
          { cmd: `echo no > ${outside}/no.txt`, login: false, capabilities: { write_paths: [outside] } },
          { callId: 'c3' },
        ),
      ],
      [assistantMessage('done')],
    ]);
    const agent = new SandboxAgent({
      name: 'a',
      instructions: 'x',
      model,
      capabilities: [filesystem(), alephShell()],
    });
    const runner = new Runner();
    const first = await runner.run(agent, 'go', { sandbox: { client } });
    expect(first.interruptions.map((i) => i.name)).toEqual(['exec_command']);
    expect(seen(model).c1).toMatch(/Process exited with code 0\nOutput:\ninside\n$/);
    // Through a RunState string, as an app that asks a person would.
    const state = await RunState.fromString(agent, first.state.toString());
    for (const item of state.getInterruptions()) state.approve(item);
    const second = await runner.run(agent, state, { sandbox: { client } });
    expect(existsSync(path.join(outside, 'ok.txt'))).toBe(true);
    expect(driver.requests.at(-1)?.capabilities.fsWrite).toContain(outside);
    for (const item of second.interruptions) second.state.reject(item, { message: 'not this one' });
    const third = await runner.run(agent, second.state, { sandbox: { client } });
    expect(third.finalOutput).toBe('done');
    expect(seen(model).c3).toBe('not this one');
    expect(existsSync(path.join(outside, 'no.txt'))).toBe(false);
    // The sandbox never asked its own requester: the run's approval covered the call.
    expect(asked).toEqual([]);
  });

  it("with the SDK's own shell(), commands run at the baseline and a refusal is a result the model reads", async () => {
    const { client, asked } = setup();
    const model = new ScriptedModel([
      [functionCall('exec_command', { cmd: 'pwd', workdir: '/' }, { callId: 'c1' })],
      [functionCall('exec_command', { cmd: 'echo fine' }, { callId: 'c2' })],
      [assistantMessage('done')],
    ]);
    const agent = new SandboxAgent({
      name: 'a',
      instructions: 'x',
      model,
      capabilities: [filesystem(), shell()],
    });
    const result = await new Runner().run(agent, 'go', { sandbox: { client } });
    expect(result.finalOutput).toBe('done');
    expect(seen(model).c1).toMatch(
      /Process exited with code 126\nOutput:\n\[aleph\] ALEPH_CAPABILITY_DENIED: capability denied: cwd outside workspace root/,
    );
    expect(seen(model).c2).toMatch(/Output:\nfine\n$/);
    expect(asked).toEqual([]);
  });

  it('parallel calls of one turn run in one session, each with its own output', async () => {
    const { client } = setup();
    const barrier = (i: number) =>
      `touch s-${i}; n=0; while [ ! -e s-1 ] || [ ! -e s-2 ]; do n=$((n+1)); [ $n -gt 200 ] && { echo alone; exit 1; }; sleep 0.02; done; echo together-${i}`;
    const model = new ScriptedModel([
      [1, 2].map((i) => functionCall('exec_command', { cmd: barrier(i), login: false }, { callId: `p${i}` })),
      [assistantMessage('done')],
    ]);
    const agent = new SandboxAgent({
      name: 'a',
      instructions: 'x',
      model,
      capabilities: [filesystem(), alephShell()],
    });
    await new Runner().run(agent, 'go', { sandbox: { client } });
    expect(seen(model).p1).toMatch(/Output:\ntogether-1\n$/);
    expect(seen(model).p2).toMatch(/Output:\ntogether-2\n$/);
  });

  it("a session given to the run (provided) gets the agent's manifest added, and stays open afterwards", async () => {
    const { client } = setup();
    const session = await client.create();
    try {
      const model = new ScriptedModel([
        [functionCall('exec_command', { cmd: 'cat /workspace/added.txt', login: false }, { callId: 'c1' })],
        [assistantMessage('done')],
      ]);
      const agent = new SandboxAgent({
        name: 'a',
        instructions: 'x',
        model,
        capabilities: [filesystem(), alephShell()],
        defaultManifest: { entries: { 'added.txt': { type: 'file', content: 'from the agent\n' } } },
      });
      await new Runner().run(agent, 'go', { sandbox: { session } });
      expect(seen(model).c1).toMatch(/Output:\nfrom the agent\n$/);
      expect((await session.exec({ cmd: 'echo still open', login: false })).output).toBe('still open\n');
    } finally {
      await session.close();
    }
  });

  it('the manifest the agent declares is written, and apply_patch edits it under /workspace', async () => {
    const { client } = setup();
    const model = new ScriptedModel([
      [
        {
          type: 'apply_patch_call',
          callId: 'e1',
          status: 'completed',
          operation: { type: 'update_file', path: '/workspace/data.txt', diff: '@@\n-payload\n+changed\n' },
        },
      ],
      [functionCall('exec_command', { cmd: 'cat /workspace/data.txt', login: false }, { callId: 'e2' })],
      [assistantMessage('done')],
    ]);
    const agent = new SandboxAgent({
      name: 'a',
      instructions: 'x',
      model,
      capabilities: [filesystem(), alephShell()],
      defaultManifest: { entries: { 'data.txt': { type: 'file', content: 'payload\n' } } },
    });
    await new Runner().run(agent, 'go', { sandbox: { client } });
    expect(seen(model).e1).toBe('completed: Updated /workspace/data.txt');
    expect(seen(model).e2).toMatch(/Output:\nchanged\n?$/);
    expect(model.firstCall?.request.systemInstructions).toMatch(/\/workspace\ndata\.txt/);
  });
});
