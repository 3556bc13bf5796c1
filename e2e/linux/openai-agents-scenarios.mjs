// Command scenarios of the OpenAI Agents harness: the SDK's Runner with a ScriptedModel drives
// exec_command / write_stdin of an AlephSandboxClient session in the real sandbox, and each scenario
// returns what the model was given (and what was left on the host).
import { assistantMessage, functionCall, modelResponder } from '@openai/agents/testing';
import { fileScenarios } from './openai-agents-file-scenarios.mjs';
import { gitScenarios } from './openai-agents-git-scenarios.mjs';
import {
  agentWith,
  clientFor,
  lastSessionId,
  leftAfter,
  processesWith,
  runWith,
  seen,
  upTo,
} from './openai-agents-run.mjs';
import { sessionScenarios } from './openai-agents-session-scenarios.mjs';

const exec = (callId, cmd, extra = {}) => [functionCall('exec_command', { cmd, ...extra }, { callId })];
const stdin = (callId, chars, extra = {}) =>
  modelResponder((call) => [
    functionCall('write_stdin', { session_id: lastSessionId(call), chars, ...extra }, { callId }),
  ]);

const processScenarios = {
  // A long command yields while it runs (first lines only), and a poll gets the rest and its exit.
  async 'long-output'(plan) {
    const { agent, model } = agentWith([
      exec('c1', 'for i in 1 2 3 4 5 6; do echo line-$i; sleep 0.4; done', { yield_time_ms: 700 }),
      stdin('c2', '', { yield_time_ms: 20_000 }),
      exec('c3', 'seq 1 20000', { max_output_tokens: 40 }),
      [assistantMessage('done')],
    ]);
    const result = await runWith(agent, 'go', clientFor(plan));
    return { ...seen(model), final: result.finalOutput };
  },

  // stdin reaches an interactive program line by line; \u0004 ends a program's input.
  async interactive(plan) {
    const { agent, model } = agentWith([
      exec('c1', 'echo ready; read a; echo "got $a"; read b; echo "got $b"', { yield_time_ms: 1500 }),
      stdin('c2', 'one\n', { yield_time_ms: 1500 }),
      stdin('c3', 'two\n', { yield_time_ms: 10_000 }),
      exec('c4', 'tr a-z A-Z', { yield_time_ms: 300 }),
      stdin('c5', 'quiet words\u0004', { yield_time_ms: 10_000 }),
      [functionCall('write_stdin', { session_id: 99, chars: 'x' }, { callId: 'c6' })],
      [assistantMessage('done')],
    ]);
    await runWith(agent, 'go', clientFor(plan));
    return seen(model);
  },

  // \u0003 interrupts a running command: its whole tree ends.
  async interrupt(plan) {
    const n = `${plan.marker}1`;
    let before = 0;
    const { agent, model } = agentWith([
      exec('c1', `sleep ${n} & sleep ${n}; wait`, { yield_time_ms: 300 }),
      modelResponder(async (call) => {
        before = await upTo(`sleep\0${n}`, 2);
        return [
          functionCall(
            'write_stdin',
            { session_id: lastSessionId(call), chars: '\u0003', yield_time_ms: 10_000 },
            { callId: 'c2' },
          ),
        ];
      }),
      [assistantMessage('done')],
    ]);
    await runWith(agent, 'go', clientFor(plan));
    return { ...seen(model), before, left: await leftAfter(`sleep\0${n}`) };
  },

  // Aborting the run kills a command it started, with everything under it.
  async abort(plan) {
    const n = `${plan.marker}2`;
    const controller = new AbortController();
    const { agent } = agentWith([
      exec('c1', `sleep ${n} & sleep ${n}; wait`, { yield_time_ms: 30_000 }),
      [assistantMessage('done')],
    ]);
    const running = runWith(agent, 'go', clientFor(plan), { signal: controller.signal });
    const before = await upTo(`sleep\0${n}`, 2);
    controller.abort(new Error('user pressed stop'));
    let outcome = 'resolved';
    try {
      await running;
    } catch (error) {
      outcome = error?.name ?? 'error';
    }
    return { before, outcome, left: await leftAfter(`sleep\0${n}`) };
  },

  // The sandbox's timeout ends a command; the model reads exit code 124 and why.
  async timeout(plan) {
    const n = `${plan.marker}3`;
    const { agent, model } = agentWith([
      exec('c1', `sleep ${n}`, { yield_time_ms: 30_000 }),
      [assistantMessage('done')],
    ]);
    await runWith(agent, 'go', clientFor(plan, {}, { default_timeout_seconds: 2 }));
    return { ...seen(model), left: processesWith(`sleep\0${n}`).length };
  },

  // A host outside the allowlist is refused by the proxy; without network nothing resolves. Both are
  // results the model reads, and the run goes on.
  async network(plan) {
    const curl =
      "curl -sS -o /dev/null -w 'connect=%{http_connect} http=%{http_code}\\n' https://denied.example/; echo curl-exit=$?";
    const { agent, model } = agentWith([exec('c1', curl), [assistantMessage('noted')]]);
    const allowed = await runWith(
      agent,
      'go',
      clientFor(plan, {}, { network: { allow: ['allowed.example'] } }),
    );
    const none = agentWith([exec('c2', curl), [assistantMessage('noted')]]);
    await runWith(none.agent, 'go', clientFor(plan));
    return { ...seen(model), ...seen(none.model), final: allowed.finalOutput };
  },

  // Three calls of one model turn run at once in one session: each waits for the others to have started.
  async parallel(plan) {
    const barrier = (i) =>
      `touch started-${i}; n=0; while [ ! -e started-1 ] || [ ! -e started-2 ] || [ ! -e started-3 ]; do n=$((n+1)); [ $n -gt 200 ] && { echo alone-${i}; exit 1; }; sleep 0.05; done; echo together-${i}`;
    const { agent, model } = agentWith([
      [1, 2, 3].map((i) =>
        functionCall('exec_command', { cmd: barrier(i), yield_time_ms: 30_000 }, { callId: `p${i}` }),
      ),
      [assistantMessage('done')],
    ]);
    await runWith(agent, 'go', clientFor(plan));
    return seen(model);
  },
};

export const openaiScenarios = {
  ...processScenarios,
  ...fileScenarios,
  ...sessionScenarios,
  ...gitScenarios,
};
