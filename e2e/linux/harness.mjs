#!/usr/bin/env node
// Runs a list of commands through WorkspaceSandbox + the Linux driver and prints one JSON result per
// step. The e2e tests run it as root and, through setpriv, as an unprivileged uid.
// Input (stdin): { workspaceRoot, driver: { maxPids?, resolve?: { name: [ips] }, proxy?: { egressPorts?, deny? }, … },
//   steps: [{ id, session?, command, hold?, via? }] (via 'spawn': through the session API, spawn() with its
//     output streamed, then wait(); default execute()),
//   parallel?: run every step at once instead of one after the other; a step may then have
//     repeat (run N times in a row, ids `id#k`, `{k}` in its session replaced by k), waitFor (a host path that must exist before it starts)
//     and background (an attacker: it is not waited for before `stopFile` is created), doneFile (a host path
//     created once the step's run has returned, its check after the run included),
//   stopFile?: created on the host once every step that is not `background` has finished,
//   workspaces?: { session: path } (workspaceFor), approve?: 'all' (default) | 'none' | [paths] (approved
//     when every path asked for, realpath-resolved, is one of these or inside the session's baseline),
//   maxOutputBytes?: the sandbox's output budget, spawnWithoutApproval?: spawning is in the baseline }
// Each result also says the size of the output's details and JSON (`detailsBytes`, `jsonBytes`) and what
// the bound on details left out (`omitted`, `denialsDropped`).
// A step run on its own (not parallel) also returns `audit`: the outcome and details.denials of the
// capability_ledger record its execution published.
import diagnosticsChannel from 'node:diagnostics_channel';
import { existsSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { createLinuxDriver } from '@aleph/driver-linux';
import { createStaticResolver } from '@aleph/proxy';
import {
  ApprovalGate,
  CAPABILITY_LEDGER_CHANNEL,
  strictCapabilities,
  WorkspaceSandbox,
} from '@aleph/sandbox-core';

const plan = JSON.parse(readFileSync(0, 'utf8'));
const { resolve, proxy, ...driverOptions } = plan.driver ?? {};
const driver = createLinuxDriver({
  ...driverOptions,
  proxy: { ...proxy, ...(resolve ? { resolver: createStaticResolver(resolve, false) } : {}) },
});
const probe = await driver.probe();
/** The answer to `request`: `plan.approve` as a word, or a list of the only paths approved. */
const answer = (request) => {
  if (!Array.isArray(plan.approve)) return plan.approve === 'none' ? 'denied' : 'approved';
  const within = (p, roots) => roots.some((r) => p === r || p.startsWith(`${r}/`));
  const { fsRead, fsWrite } = request.requested;
  const granted = [...request.baseline.fsWrite, ...plan.approve];
  const ok =
    fsWrite.every((p) => within(p, granted)) &&
    fsRead.every((p) => within(p, [...granted, ...request.baseline.fsRead]));
  return ok ? 'approved' : 'denied';
};
const workspaces = plan.workspaces ?? {};
const sandbox = new WorkspaceSandbox({
  driver,
  workspaceRoot: plan.workspaceRoot,
  approvalGate: new ApprovalGate({ requester: { requestApproval: async (r) => ({ outcome: answer(r) }) } }),
  defaultTimeoutMs: 20_000,
  ...(plan.maxOutputBytes === undefined ? {} : { maxOutputBytes: plan.maxOutputBytes }),
  ...(plan.spawnWithoutApproval ? { baseline: { ...strictCapabilities(), spawnSubprocess: true } } : {}),
  ...(plan.workspaces ? { workspaceFor: (id) => workspaces[id] } : {}),
});
// An open descriptor on a secret, to prove descriptors do not leak into the sandbox.
if (plan.secretFile) openSync(plan.secretFile, 'r');

// The ledger records published while a step runs on its own.
const ledger = [];
diagnosticsChannel.subscribe(CAPABILITY_LEDGER_CHANNEL, (record) => ledger.push(record));

/** A stream's text, read to its end. */
async function text(stream) {
  let out = '';
  const decoder = new TextDecoder();
  for await (const chunk of stream) out += decoder.decode(chunk, { stream: true });
  return out + decoder.decode();
}

/** The step's command through execute(), or through spawn() with its output streamed (`via: 'spawn'`). */
async function runCommand(step, input) {
  if (step.via !== 'spawn') {
    const out = await sandbox.execute(input);
    return { out, stdout: out.stdoutText, stderr: out.stderrText };
  }
  const proc = await sandbox.spawn(input);
  const [stdout, stderr, out] = await Promise.all([text(proc.stdout), text(proc.stderr), proc.wait()]);
  return { out, stdout, stderr };
}

async function runStep(step, id, k = 0) {
  const sessionId = (step.session ?? 'e2e').replaceAll('{k}', String(k));
  const workspace = sandbox.workspacePath(sessionId);
  const command = JSON.parse(JSON.stringify(step.command).replaceAll('{ws}', workspace));
  ledger.length = 0;
  try {
    const { out, stdout, stderr } = await runCommand(step, { sessionId, ...command });
    const record = plan.parallel ? undefined : ledger.find((r) => r.type === 'capability_ledger');
    return {
      id,
      workspace,
      exitCode: out.exitCode,
      signal: out.signal,
      stdout,
      stderr,
      timedOut: out.timedOut,
      notEnforced: out.details.notEnforced,
      denials: out.details.denials ?? [],
      ...(record === undefined
        ? {}
        : {
            audit: {
              outcome: record.outcome,
              denials: record.details?.denials ?? [],
              bytes: Buffer.byteLength(JSON.stringify(record)),
            },
          }),
      detailsBytes: Buffer.byteLength(JSON.stringify(out.details ?? {})),
      jsonBytes: Buffer.byteLength(JSON.stringify(out)),
      omitted: out.details.omitted,
      denialsDropped: out.details.denialsDropped,
      afterRun: out.details.afterRun,
      quarantine: out.details.quarantine,
      setIdCleared: out.details.setIdCleared,
      symlinksOut: out.details.symlinksOut,
    };
  } catch (error) {
    return { id, workspace, error: { code: error.code, message: error.message } };
  }
}

const results = [];
if (plan.parallel) {
  const running = plan.steps.map(async (step) => {
    for (let i = 0; step.waitFor && !existsSync(step.waitFor) && i < 400; i++) await sleep(50);
    const repeat = step.repeat ?? 1;
    for (let k = 0; k < repeat; k++)
      results.push(await runStep(step, repeat === 1 ? step.id : `${step.id}#${k}`, k));
    if (step.doneFile) writeFileSync(step.doneFile, '');
  });
  await Promise.all(running.filter((_, i) => !plan.steps[i].background));
  if (plan.stopFile) writeFileSync(plan.stopFile, '');
  await Promise.all(running);
} else {
  for (const step of plan.steps) results.push(await runStep(step, step.id));
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
