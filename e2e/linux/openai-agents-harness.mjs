#!/usr/bin/env node
// Runs OpenAI Agents SDK scenarios with AlephSandboxClient in the real Linux sandbox: each builds a
// SandboxAgent with a ScriptedModel, runs it with the SDK's own Runner, and reports what the model saw and
// what happened on the host. Prints one JSON object { uid, results: { name: observations } }. The e2e test
// runs it as root and, through setpriv, as uid 65534.
// Input (stdin): { base: dir of this uid's own, secret, secretDir, marker, stateFile, scenarios: [name…] }
import { readFileSync } from 'node:fs';
import { setTracingDisabled } from '@openai/agents';
import { openaiScenarios } from './openai-agents-scenarios.mjs';

setTracingDisabled(true);
const plan = JSON.parse(readFileSync(0, 'utf8'));
const results = {};
for (const name of plan.scenarios) {
  const scenario = openaiScenarios[name];
  try {
    if (scenario === undefined) throw new Error(`no scenario ${name}`);
    results[name] = await scenario(plan);
  } catch (error) {
    results[name] = {
      crashed: {
        name: error?.name,
        code: error?.code,
        message: String(error?.message ?? error),
        stack: error?.stack,
      },
    };
  }
}
process.stdout.write(JSON.stringify({ uid: process.getuid(), results }));
