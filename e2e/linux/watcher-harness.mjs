#!/usr/bin/env node
// e2e/linux/watcher.test.ts: runs the steps of a plan (stdin, JSON) through one Linux driver, as the uid this
// process runs as, so the fork server's change watcher (native/linux/watcher) lives across the runs: each
// workspace gets its own sandbox; a step `{ ws, command, ready?, with?, delay? }` runs `sh -c command` in ws, first
// running `true` until the check after the run is by the watcher's journal when `ready` (at most 50 tries),
// and at the same time as the steps named by `with` (their indices, started together; a step's `delay` ms
// after the group starts). Prints one JSON line
// per step: its exit code, its stderr, and the details the tests read.
import { readFileSync } from 'node:fs';
import { createLinuxDriver } from '@aleph/driver-linux';
import { ApprovalGate, WorkspaceSandbox } from '@aleph/sandbox-core';

const plan = JSON.parse(readFileSync(0, 'utf8'));
const driver = createLinuxDriver({ stateDir: plan.stateDir });
const approvalGate = new ApprovalGate({
  requester: { requestApproval: async () => ({ outcome: 'approved' }) },
});
const sandboxes = new Map();
const sandboxFor = (ws) => {
  if (!sandboxes.has(ws))
    sandboxes.set(
      ws,
      new WorkspaceSandbox({
        driver,
        workspaceRoot: ws,
        workspaceFor: () => ws,
        approvalGate,
        defaultTimeoutMs: 300_000,
      }),
    );
  return sandboxes.get(ws);
};
const exec = (ws, command) =>
  sandboxFor(ws).execute({
    sessionId: plan.session ?? 'watch',
    program: '/bin/sh',
    args: ['-c', command],
    capabilities: { spawnSubprocess: true },
  });
const shown = (step, r, tries) => ({
  step,
  tries,
  exitCode: r.exitCode,
  stderr: Buffer.from(r.stderr).toString().slice(0, 2000),
  afterRun: r.details?.afterRun,
  quarantined: r.details?.quarantined ?? [],
  setIdCleared: r.details?.setIdCleared ?? [],
  symlinksOut: r.details?.symlinksOut ?? [],
});

async function warm(ws) {
  for (let tries = 1; tries <= 50; tries++) {
    const r = await exec(ws, 'true');
    if (r.details?.afterRun?.method === 'journal') return tries;
    await new Promise((done) => setTimeout(done, 100));
  }
  return -1;
}

const done = new Set();
for (let i = 0; i < plan.steps.length; i++) {
  if (done.has(i)) continue;
  const group = [i, ...(plan.steps[i].with ?? [])];
  const tries = [];
  for (const k of group) tries[k] = plan.steps[k].ready ? await warm(plan.steps[k].ws) : 0;
  const later = (k) => new Promise((go) => setTimeout(go, plan.steps[k].delay ?? 0));
  const results = await Promise.all(
    group.map((k) => later(k).then(() => exec(plan.steps[k].ws, plan.steps[k].command))),
  );
  group.forEach((k, n) => {
    done.add(k);
    console.log(JSON.stringify(shown(k, results[n], tries[k])));
  });
}
await driver.dispose?.();
process.exit(0);
