#!/usr/bin/env node
// Runs a list of commands through WorkspaceSandbox + the Linux driver and prints one JSON result per
// step. The e2e tests run it as root and, through setpriv, as an unprivileged uid.
// Input (stdin): { workspaceRoot, driver: { maxPids?, resolve?: { name: [ips] }, … }, steps: [{ id, session?, command, hold? }] }
import { openSync, readFileSync } from 'node:fs';
import { createLinuxDriver } from '@aleph/driver-linux';
import { createStaticResolver } from '@aleph/proxy';
import { ApprovalGate, WorkspaceSandbox } from '@aleph/sandbox-core';

const plan = JSON.parse(readFileSync(0, 'utf8'));
const { resolve, ...driverOptions } = plan.driver ?? {};
const driver = createLinuxDriver({
  ...driverOptions,
  ...(resolve ? { proxy: { resolver: createStaticResolver(resolve, false) } } : {}),
});
const probe = await driver.probe();
const sandbox = new WorkspaceSandbox({
  driver,
  workspaceRoot: plan.workspaceRoot,
  approvalGate: new ApprovalGate({ requester: { requestApproval: async () => ({ outcome: 'approved' }) } }),
  defaultTimeoutMs: 20_000,
});
// An open descriptor on a secret, to prove descriptors do not leak into the sandbox.
if (plan.secretFile) openSync(plan.secretFile, 'r');
const results = [];
for (const step of plan.steps) {
  const sessionId = step.session ?? 'e2e';
  const workspace = sandbox.workspacePath(sessionId);
  const command = JSON.parse(JSON.stringify(step.command).replaceAll('{ws}', workspace));
  try {
    const out = await sandbox.execute({ sessionId, ...command });
    results.push({
      id: step.id,
      workspace,
      exitCode: out.exitCode,
      signal: out.signal,
      stdout: out.stdoutText,
      stderr: out.stderrText,
      timedOut: out.timedOut,
    });
  } catch (error) {
    results.push({ id: step.id, workspace, error: { code: error.code, message: error.message } });
  }
}
await sandbox.dispose();
process.stdout.write(
  JSON.stringify({
    uid: process.getuid(),
    tier: probe.tier,
    tierId: probe.tierId,
    notEnforced: probe.notEnforced,
    available: probe.available,
    problems: probe.problems,
    results,
  }),
);
