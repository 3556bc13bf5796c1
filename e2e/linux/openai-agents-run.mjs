// Shared pieces of the OpenAI Agents scenarios: an agent run with a ScriptedModel and AlephSandboxClient,
// what the model saw of each tool call, and host process checks.
import path from 'node:path';
import { AlephSandboxClient, alephShell } from '@aleph/openai-agents';
import { Runner } from '@openai/agents';
import { filesystem, SandboxAgent } from '@openai/agents/sandbox';
import { ScriptedModel } from '@openai/agents/testing';
import { leftAfter as leftAfterSeconds } from './host-processes.mjs';

/** A client whose session workspaces live under `plan.base` (config inline), with `options` on top. */
export function clientFor(plan, options = {}, sandbox = {}) {
  return new AlephSandboxClient({
    config: { sandbox: { workspace_root: path.join(plan.base, 'workspaces'), ...sandbox } },
    ...options,
  });
}

/** A SandboxAgent with the filesystem and Aleph shell capabilities, driven by `steps`. */
export function agentWith(steps, name = 'dev') {
  const model = new ScriptedModel(steps);
  const agent = new SandboxAgent({
    name,
    instructions: 'Work in the sandbox.',
    model,
    capabilities: [filesystem(), alephShell()],
  });
  return { agent, model };
}

/** Runs `agent` with `client` (or continues `state`) and returns the result. */
export function runWith(agent, input, client, extra = {}) {
  return new Runner().run(agent, input, { sandbox: { client }, ...extra });
}

/** The text of every tool result the model was given, by call id. */
export function seen(model) {
  const out = {};
  for (const call of model.calls) {
    for (const item of call.request.input ?? []) {
      if (item.type === 'function_call_result') {
        out[item.callId] =
          typeof item.output === 'string' ? item.output : (item.output?.text ?? JSON.stringify(item.output));
      } else if (item.type === 'apply_patch_call_output') {
        out[item.callId] = `${item.status}: ${item.output ?? ''}`;
      }
    }
  }
  return out;
}

/** The session ID in the last exec_command result the model saw (for write_stdin). */
export function lastSessionId(call) {
  const results = (call.request.input ?? []).filter((i) => i.type === 'function_call_result');
  const text = results.at(-1)?.output?.text ?? '';
  const m = /Process running with session ID (\d+)/.exec(text);
  if (m === null) throw new Error(`no running session in: ${text}`);
  return Number(m[1]);
}

export { processesWith, upTo } from './host-processes.mjs';

/** What is left of `needle`'s processes after up to 5 s. */
export const leftAfter = (needle) => leftAfterSeconds(needle, 5);
