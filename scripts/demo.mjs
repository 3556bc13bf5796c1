#!/usr/bin/env node
// A demonstration of the six-step pipeline with the fake driver (no OS isolation yet): a baseline command
// runs, an elevation goes through the approval gate, a cwd escape is refused, and every execution leaves
// one audit record.
import diagnosticsChannel from 'node:diagnostics_channel';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ApprovalGate, CAPABILITY_LEDGER_CHANNEL, WorkspaceSandbox } from '@aleph/sandbox-core';
import { createFakeDriver, FakeApprovalRequester } from '@aleph/sandbox-core/testing';

const root = mkdtempSync(path.join(os.tmpdir(), 'aleph-demo-'));
diagnosticsChannel.subscribe(CAPABILITY_LEDGER_CHANNEL, (r) =>
  console.log(
    `  audit: ${r.program} → ${r.outcome} (${r.decision})${r.denial ? `: ${r.denial.reason}` : ''}`,
  ),
);
const sandbox = new WorkspaceSandbox({
  driver: createFakeDriver({ output: { stdout: new TextEncoder().encode('ok\n') } }),
  workspaceRoot: root,
  approvalGate: new ApprovalGate({ requester: new FakeApprovalRequester({ outcome: 'approved' }) }),
});
const run = async (label, cmd) => {
  console.log(label);
  try {
    const out = await sandbox.execute({ sessionId: 'demo', ...cmd });
    console.log(`  exit ${out.exitCode}: ${out.stdoutText.trim()}`);
  } catch (e) {
    console.log(`  ${e.code}: ${e.message}`);
  }
};
await run('baseline command', { program: 'ls' });
await run('elevation (network) → approval gate', {
  program: 'curl',
  capabilities: { network: { kind: 'allowHosts', hosts: ['pypi.org'] } },
});
await run('cwd escape', { program: 'ls', cwd: root });
rmSync(root, { recursive: true, force: true });
