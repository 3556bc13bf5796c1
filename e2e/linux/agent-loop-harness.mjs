#!/usr/bin/env node
// Runs agent-loop scenarios of a framework adapter (its own loop with its own mock model) against the real
// Linux sandbox and prints one JSON object: { uid, results: { name: observations } }. The e2e tests run it
// as root and, through setpriv, as an unprivileged uid.
// Input (stdin): { module: 'ai-sdk-scenarios.mjs' | …, scenarios: [name…], base, secret, secretDir,
//   shared, marker } (see e2e/linux/agent-loop-run.ts).
import { readFileSync } from 'node:fs';

const plan = JSON.parse(readFileSync(0, 'utf8'));
const { scenarios } = await import(new URL(`./${plan.module}`, import.meta.url).href);
const results = {};
for (const name of plan.scenarios) {
  const scenario = scenarios[name];
  try {
    if (scenario === undefined) throw new Error(`no scenario ${name} in ${plan.module}`);
    results[name] = await scenario(plan);
  } catch (error) {
    results[name] = {
      crashed: { code: error?.code, message: String(error?.message ?? error), stack: error?.stack },
    };
  }
}
process.stdout.write(JSON.stringify({ uid: process.getuid(), results }));
