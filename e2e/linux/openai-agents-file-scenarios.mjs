// File, approval and resume scenarios of the OpenAI Agents harness: apply_patch through the session's file
// API, links a command planted to a host secret, approvals through the run's interruptions, and a RunState
// resumed by another process.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { RunState } from '@openai/agents';
import { Manifest } from '@openai/agents/sandbox';
import { assistantMessage, functionCall } from '@openai/agents/testing';
import { agentWith, clientFor, runWith, seen } from './openai-agents-run.mjs';

const exec = (callId, cmd, extra = {}) => [functionCall('exec_command', { cmd, ...extra }, { callId })];
const patch = (callId, operation) => [{ type: 'apply_patch_call', callId, status: 'completed', operation }];
const codeOf = async (p) =>
  p.then(
    () => 'resolved',
    (e) => e?.code ?? e?.name ?? String(e),
  );

/** A directory of this uid's own under the base. */
function dirIn(plan, name) {
  const dir = path.join(plan.base, name);
  mkdirSync(dir, { recursive: true });
  return dir;
}

/** An approval requester that records what it was asked, and denies. */
function recordingRequester() {
  const asked = [];
  return {
    asked,
    async requestApproval(request) {
      asked.push(request.reasons);
      return { outcome: 'denied', reason: 'the test denies what the run did not approve' };
    },
  };
}

export const fileScenarios = {
  // The SDK's manifest modes in the real sandbox: a script entry runs (0755 by default), a dir's
  // permissions and sticky bit are set; create_file of an existing file fails and leaves it alone.
  async manifest(plan) {
    const workspace = dirIn(plan, 'manifested');
    const manifest = new Manifest({
      entries: {
        'run.sh': { type: 'file', content: '#!/bin/sh\necho ran-from-manifest\n' },
        private: { type: 'dir', permissions: 0o700, children: { 'k.txt': { type: 'file', content: 'k' } } },
        drop: { type: 'dir', permissions: { owner: 7, group: 7, other: 7, directory: true, sticky: true } },
      },
    });
    const { agent, model } = agentWith([
      exec('m1', './run.sh && stat -c "%a %n" run.sh private drop'),
      patch('m2', { type: 'create_file', path: 'run.sh', diff: '+replaced\n' }),
      [assistantMessage('done')],
    ]);
    agent.defaultManifest = manifest;
    await runWith(agent, 'go', clientFor(plan, { workspace }));
    return { ...seen(model), script: readFileSync(path.join(workspace, 'run.sh'), 'utf8') };
  },

  // apply_patch creates, updates (V4A), moves and deletes files in the user's own directory.
  async editor(plan) {
    const workspace = dirIn(plan, 'project');
    writeFileSync(path.join(workspace, 'app.txt'), 'alpha\nbeta\ngamma\n');
    const { agent, model } = agentWith([
      patch('e1', { type: 'create_file', path: 'notes/todo.md', diff: '+first\n+second\n' }),
      patch('e2', { type: 'update_file', path: 'app.txt', diff: '@@\n alpha\n-beta\n+BETA\n gamma\n' }),
      patch('e3', { type: 'update_file', path: 'notes/todo.md', diff: '', moveTo: 'done.md' }),
      patch('e4', { type: 'delete_file', path: 'app.txt' }),
      patch('e5', { type: 'update_file', path: 'missing.txt', diff: '@@\n-x\n+y\n' }),
      exec('e6', 'cat done.md; ls'),
      [assistantMessage('done')],
    ]);
    await runWith(agent, 'go', clientFor(plan, { workspace }));
    return {
      ...seen(model),
      done: readFileSync(path.join(workspace, 'done.md'), 'utf8'),
      appLeft: existsSync(path.join(workspace, 'app.txt')),
    };
  },

  // A command plants links to a host secret; the file tools refuse to go through them. The host itself
  // reaches the secret through the same links (the control).
  async symlink(plan) {
    const workspace = dirIn(plan, 'linked');
    const { agent, model } = agentWith([
      exec('s1', `ln -s ${plan.secret} leak; ln -s ${plan.secretDir} leakdir; cat leak; echo cat-exit=$?`),
      patch('s2', { type: 'update_file', path: 'leak', diff: '@@\n-x\n+y\n' }),
      patch('s3', { type: 'create_file', path: 'leakdir/planted.txt', diff: '+planted\n' }),
      [functionCall('view_image', { path: 'leak' }, { callId: 's4' })],
      [assistantMessage('done')],
    ]);
    const client = clientFor(plan, { workspace });
    await runWith(agent, 'go', client);
    const session = await client.create();
    try {
      const direct = await codeOf(session.readFile({ path: 'leak' }));
      const directInside = await codeOf(session.readFile({ path: 'leakdir/id_rsa' }));
      return {
        ...seen(model),
        direct,
        directInside,
        control: readFileSync(path.join(workspace, 'leak'), 'utf8'),
        planted: existsSync(path.join(plan.secretDir, 'planted.txt')),
      };
    } finally {
      await session.close();
    }
  },

  // Two commands ask to write outside the workspace: the run stops for approval each time; one is approved
  // (it runs, and the sandbox does not ask again), one rejected (it never runs).
  async approval(plan) {
    const outside = dirIn(plan, 'outside');
    const requester = recordingRequester();
    const ask = { capabilities: { write_paths: [outside] } };
    const { agent, model } = agentWith([
      exec('a0', 'echo inside > inside.txt; cat inside.txt'),
      exec('a1', `echo approved > ${outside}/approved.txt; cat ${outside}/approved.txt`, ask),
      exec('a2', `echo rejected > ${outside}/rejected.txt`, ask),
      [assistantMessage('done')],
    ]);
    const client = clientFor(plan, { approvalRequester: requester });
    const first = await runWith(agent, 'go', client);
    const interruptions = [first.interruptions.map((i) => `${i.name} ${i.arguments}`)];
    for (const item of first.interruptions) first.state.approve(item);
    const second = await runWith(agent, first.state, client);
    interruptions.push(second.interruptions.map((i) => `${i.name} ${i.arguments}`));
    for (const item of second.interruptions) second.state.reject(item, { message: 'the user said no' });
    const third = await runWith(agent, second.state, client);
    const askedByRuns = requester.asked.length;
    // Control: the same request without the run's approval goes to the client's requester (denied).
    const session = await client.create();
    let unapproved;
    try {
      unapproved = await session.execCommand({
        cmd: `echo sneaky > ${outside}/sneaky.txt`,
        capabilities: { fsWrite: [outside] },
      });
    } finally {
      await session.close();
    }
    return {
      ...seen(model),
      interruptions,
      final: third.finalOutput,
      approvedFile: existsSync(path.join(outside, 'approved.txt')),
      rejectedFile: existsSync(path.join(outside, 'rejected.txt')),
      sneakyFile: existsSync(path.join(outside, 'sneaky.txt')),
      askedByRuns,
      askedByControl: requester.asked.length - askedByRuns,
      unapproved,
    };
  },

  // Process A: a run stops for approval; its RunState goes to a file.
  async 'resume-a'(plan) {
    const outside = dirIn(plan, 'resumed');
    const { agent } = agentWith([
      exec('r1', 'echo written-in-a > a.txt'),
      exec('r2', `cat a.txt > ${outside}/resumed.txt; pwd`, { capabilities: { write_paths: [outside] } }),
    ]);
    const result = await runWith(agent, 'go', clientFor(plan));
    writeFileSync(plan.stateFile, result.state.toString());
    const json = JSON.parse(result.state.toString());
    const sandbox = json.sandbox ?? json._sandbox;
    return {
      interruptions: result.interruptions.map((i) => i.name),
      backendId: sandbox?.backendId,
      providerKeys: Object.keys(sandbox?.sessionState?.providerState ?? {}).sort(),
    };
  },

  // Process B: the RunState from A, approved and run with a new client: same workspace. A tampered copy
  // naming another directory is refused.
  async 'resume-b'(plan) {
    const outside = dirIn(plan, 'resumed');
    const text = readFileSync(plan.stateFile, 'utf8');
    const tampered = JSON.parse(text);
    const sbx = tampered.sandbox ?? tampered._sandbox;
    for (const entry of [
      sbx.sessionState,
      ...Object.values(sbx.sessionsByAgent).map((e) => e.sessionState),
    ]) {
      entry.providerState.userWorkspace = '/';
    }
    const bad = agentWith([[assistantMessage('never')]]);
    const badState = await RunState.fromString(bad.agent, JSON.stringify(tampered));
    for (const item of badState.getInterruptions()) badState.approve(item);
    const refused = await runWith(bad.agent, badState, clientFor(plan)).then(
      () => 'resolved',
      (e) => `${e?.name}: ${e?.message}`,
    );
    const { agent, model } = agentWith([[assistantMessage('resumed')]]);
    const state = await RunState.fromString(agent, text);
    for (const item of state.getInterruptions()) state.approve(item);
    const result = await runWith(agent, state, clientFor(plan));
    return {
      ...seen(model),
      final: result.finalOutput,
      refused,
      resumed: readFileSync(path.join(outside, 'resumed.txt'), 'utf8'),
    };
  },
};
