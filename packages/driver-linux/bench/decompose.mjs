// Profile for the driver benchmark: execute(/bin/true) on a root host taken apart into the process chain's
// parts (the host-side launcher, its protected-path opens and idmapped clones, bwrap with the
// profile's argv, the helper), each timed interleaved with bare bwrap in the same run. Diagnostic only.
// Reproduce: node packages/driver-linux/bench/decompose.mjs [rounds] [per-round]

import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { ApprovalGate, runBoundedProcess, WorkspaceSandbox } from '@aleph/sandbox-core';
import { createLinuxDriver, resolveHelperPath } from '../dist/index.js';

const H = resolveHelperPath();
const empty = mkdtempSync(`${os.tmpdir()}/aleph-dec-ws-`);
const repo = mkdtempSync(`${os.tmpdir()}/aleph-dec-repo-`);
execFileSync('git', ['init', '-q', repo]);
const driver = createLinuxDriver();
const gate = new ApprovalGate({ requester: { requestApproval: async () => ({ outcome: 'approved' }) } });
const sbE = new WorkspaceSandbox({ driver, workspaceRoot: empty, approvalGate: gate });
const sbR = new WorkspaceSandbox({ driver, workspaceRoot: repo, approvalGate: gate });
const caps = { fsRead: [], fsWrite: [], network: { kind: 'none' }, spawnSubprocess: true };
const wsE = (await sbE.forSession('s')).cwd;
const wsR = (await sbR.forSession('r')).cwd;
const profE = await driver.profileFor(caps, wsE, { sessionId: 's', workspace: wsE });
const profR = await driver.profileFor(caps, wsR, { sessionId: 'r', workspace: wsR });
const BARE = ['--unshare-all', '--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc', '/bin/true'];
const env = Buffer.from('PATH=/usr/bin:/bin\0HOME=/tmp\0');
const run = (file, args, extraFds) =>
  runBoundedProcess({
    file,
    args,
    env: { PATH: '/usr/bin:/bin' },
    cwd: '/',
    timeoutMs: 30000,
    maxOutputBytes: 65536,
    ...(extraFds ? { extraFds } : {}),
  });
const state = profE.launch.slice(0, 2);
const pre = mkdtempSync(`${os.tmpdir()}/aleph-dec-pre-`);
for (const d of ['.aleph', '.codex', '.agents', '.claude', '.cursor', '.vscode', '.idea'])
  mkdirSync(`${pre}/${d}`);
for (const f of ['.mcp.json', '.npmrc', '.yarnrc', '.yarnrc.yml', '.envrc']) writeFileSync(`${pre}/${f}`, '');
const profP = await driver.profileFor(caps, pre, { sessionId: 's', workspace: pre });
// The launch args with the workspace and HOME only: no protected-path opens or their clones.
const noStubs = [];
for (let i = 0; i < profE.launch.length; ) {
  const a = profE.launch[i];
  if (a === '--open-in') {
    i += 5;
    continue;
  }
  if (a === '--clone' && !['p0', 'p1'].includes(profE.launch[i + 1])) {
    i += 3;
    continue;
  }
  const n =
    a === '--open' || a === '--uid-range' || a === '--clone'
      ? 3
      : a === '--state' || a === '--check-root' || a === '--quarantine'
        ? 2
        : 1;
  noStubs.push(...profE.launch.slice(i, i + n));
  i += n;
}
const chain = (p) =>
  run(
    H,
    ['--launch', ...p.launch, '--', '/usr/bin/bwrap', ...p.bwrapArgs, '/bin/true'],
    [Buffer.from(p.seccomp.program, 'base64'), env],
  );
const v = {
  'bare bwrap': () => run('/usr/bin/bwrap', BARE),
  'launcher (no opens) -> bare bwrap': () => run(H, ['--launch', ...state, '--', '/usr/bin/bwrap', ...BARE]),
  'launcher (empty ws opens/idmap) -> bare bwrap': () =>
    run(H, ['--launch', ...profE.launch, '--', '/usr/bin/bwrap', ...BARE]),
  'launcher (ws+HOME idmap only, no protected paths) -> bare': () =>
    run(H, ['--launch', ...noStubs, '--', '/usr/bin/bwrap', ...BARE]),
  'launcher (protected paths present) -> bare bwrap': () =>
    run(H, ['--launch', ...profP.launch, '--', '/usr/bin/bwrap', ...BARE]),
  'launcher (git ws) -> bare bwrap': () =>
    run(H, ['--launch', ...profR.launch, '--', '/usr/bin/bwrap', ...BARE]),
  'full chain, empty ws (launcher+bwrap argv+helper)': () => chain(profE),
  'full chain, git ws': () => chain(profR),
  'profileFor() only, git ws': () => driver.profileFor(caps, wsR, { sessionId: 'r', workspace: wsR }),
  'execute(), empty ws': () => sbE.execute({ sessionId: 's', program: '/bin/true' }),
  'execute(), git ws': () => sbR.execute({ sessionId: 'r', program: '/bin/true' }),
};
await sbE.execute({ sessionId: 's', program: '/bin/true' });
await sbR.execute({ sessionId: 'r', program: '/bin/true' });
for (const [k, f] of Object.entries(v)) {
  const r = await f();
  if (r && r.exitCode !== undefined && r.exitCode !== 0)
    throw new Error(`${k}: exit ${r.exitCode}: ${Buffer.from(r.stderr).toString()}`);
}
const S = Object.fromEntries(Object.keys(v).map((k) => [k, []]));
const R = Number(process.argv[2] ?? 5),
  P = Number(process.argv[3] ?? 20);
for (let r = 0; r < R; r++)
  for (const [k, f] of Object.entries(v))
    for (let i = 0; i < P; i++) {
      const t = performance.now();
      await f();
      S[k].push(performance.now() - t);
    }
const med = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
const b = med(S['bare bwrap']);
console.log(
  `launch args: empty ws ${profE.launch.length}, git ws ${profR.launch.length}; bwrap args: ${profE.bwrapArgs.length} / ${profR.bwrapArgs.length}; load ${os.loadavg()[0].toFixed(2)}`,
);
for (const [k, xs] of Object.entries(S))
  console.log(`${k.padEnd(54)} ${med(xs).toFixed(2).padStart(6)} ms  ${(med(xs) / b).toFixed(2)}x bare`);
await sbE.dispose();
await sbR.dispose();
for (const d of [empty, repo, pre]) rmSync(d, { recursive: true, force: true });
