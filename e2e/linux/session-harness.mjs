#!/usr/bin/env node
// Runs session API scenarios (spawn, stdin, kill, files) through WorkspaceSandbox + the Linux driver and
// prints one JSON object: { uid, tier, results: { name: observations } }. The e2e tests run it as root
// and, through setpriv, as an unprivileged uid.
// Input (stdin): { workspaceRoot, scenarios: [name…], secret?: path, secretDir?: path,
//   ownedWorkspace?: path (a workspace dir owned by another uid, for the ownership scenario), marker: string }
import { readFileSync } from 'node:fs';
import { createLinuxDriver } from '@aleph/driver-linux';
import { ApprovalGate, WorkspaceSandbox } from '@aleph/sandbox-core';
import { fileScenarios } from './session-file-scenarios.mjs';
import { processScenarios } from './session-scenarios.mjs';

const plan = JSON.parse(readFileSync(0, 'utf8'));
const driver = createLinuxDriver({ maxPids: 64 });
const probe = await driver.probe();
const sandbox = new WorkspaceSandbox({
  driver,
  workspaceRoot: plan.workspaceRoot,
  approvalGate: new ApprovalGate({ requester: { requestApproval: async () => ({ outcome: 'approved' }) } }),
  defaultTimeoutMs: 20_000,
  // 'owned': a workspace dir owned by another uid; the home scenario's session works in HOME itself.
  workspaceFor: (id) =>
    id === 'owned' && plan.ownedWorkspace
      ? plan.ownedWorkspace
      : id === 'e2e-files-home-protected'
        ? process.env.HOME
        : undefined,
});
const scenarios = { ...processScenarios, ...fileScenarios };
const results = {};
for (const name of plan.scenarios) {
  const scenario = scenarios[name];
  try {
    if (scenario === undefined) throw new Error(`no scenario ${name}`);
    results[name] = await scenario({ sandbox, plan, session: sandbox.session(`e2e-${name}`) });
  } catch (error) {
    results[name] = {
      crashed: { code: error?.code, message: String(error?.message ?? error), stack: error?.stack },
    };
  }
}
await sandbox.dispose();
process.stdout.write(
  JSON.stringify({ uid: process.getuid(), tier: probe.tierId, available: probe.available, results }),
);
