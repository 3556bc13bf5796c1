// Tier 3's guard of protected paths (native/linux/after-run/guard.c), against baselines measured in the same run,
// rounds interleaved:
// 1. the launcher around /bin/true in a git repository (20 files, one commit, git's sample hooks):
//    `--launch --state --reap` alone (tier 3 before the guard), + `--check-root`, + `--guard` for every
//    default protected path (snapshot before, check after, snapshot removed);
// 2. execute(/bin/true) through WorkspaceSandbox + the Linux driver in that repository, with the default
//    protected paths against `protectedPaths: []` (no guard), in whatever tier the preflight picks: run it
//    on a tier-3 host to measure tier 3, e.g. under the e2e's seccomp launcher:
//      cc -O2 -o /tmp/no-namespaces e2e/linux/no-namespaces.c
//      /tmp/no-namespaces node packages/driver-linux/bench/guard.bench.mjs
// Reproduce: node bench/guard.bench.mjs (after pnpm build)   (BENCH_ROUNDS, BENCH_PER_ROUND)
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ApprovalGate, DEFAULT_PROTECTED_PATHS, WorkspaceSandbox } from '@aleph/sandbox-core';
import { createLinuxDriver, resolveHelperPath } from '../dist/index.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 6);
const PER_ROUND = Number(process.env.BENCH_PER_ROUND ?? 40);
const base = mkdtempSync(path.join(os.tmpdir(), 'aleph-bench-guard-'));
const repo = path.join(base, 'repo');
const state = path.join(base, 'state');
mkdirSync(path.join(repo, 'src'), { recursive: true });
mkdirSync(state, { mode: 0o700 });
const git = (...args) =>
  execFileSync('git', ['-c', 'user.name=bench', '-c', 'user.email=bench@example.invalid', ...args], {
    cwd: repo,
    stdio: 'ignore',
  });
git('init', '-q', '-b', 'main');
for (let i = 0; i < 20; i++)
  writeFileSync(path.join(repo, 'src', `m${i}.ts`), `export const x${i} = ${i};\n`);
writeFileSync(path.join(repo, 'package.json'), '{ "name": "bench-repo", "version": "1.0.0" }\n');
git('add', '-A');
git('commit', '-q', '-m', 'initial');

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const ms = (t0) => Number(process.hrtime.bigint() - t0) / 1e6;

// 1. The launcher alone.
const helper = resolveHelperPath();
const launch = {
  'launcher, --reap (tier 3 before)': ['--launch', '--state', state, '--reap'],
  '+ --check-root': ['--launch', '--state', state, '--reap', '--open', 'p0', repo, '--check-root', 'p0'],
  '+ --guard (every default path)': [
    '--launch',
    '--state',
    state,
    '--reap',
    '--open',
    'p0',
    repo,
    '--check-root',
    'p0',
    ...DEFAULT_PROTECTED_PATHS.flatMap((rel) => ['--guard', 'p0', rel]),
    '--report',
    path.join(base, 'report'),
  ],
};
const launchTimes = Object.fromEntries(Object.keys(launch).map((k) => [k, []]));
for (let round = 0; round < ROUNDS; round++) {
  for (const [name, args] of Object.entries(launch)) {
    for (let i = 0; i < PER_ROUND; i++) {
      const t0 = process.hrtime.bigint();
      const r = spawnSync(helper, [...args, '--', '/bin/true']);
      launchTimes[name].push(ms(t0));
      if (r.status !== 0) throw new Error(`${name}: exit ${r.status}: ${r.stderr}`);
    }
  }
}
const before = median(launchTimes['launcher, --reap (tier 3 before)']);
console.log('1. the launcher around /bin/true in a git repository (medians)');
for (const [name, times] of Object.entries(launchTimes))
  console.log(
    `   ${name.padEnd(34)} ${median(times).toFixed(3)} ms  (+${(median(times) - before).toFixed(3)} ms)`,
  );

// 2. execute() through the driver, with and without the guard.
const approvalGate = new ApprovalGate({
  requester: { requestApproval: async () => ({ outcome: 'approved' }) },
});
const variants = {
  'no guard (protectedPaths: [])': createLinuxDriver({ protectedPaths: [], stateDir: state }),
  'guard (default protected paths)': createLinuxDriver({ stateDir: state }),
};
const sandboxes = {};
let tier = '';
for (const [name, driver] of Object.entries(variants)) {
  const probe = await driver.probe();
  if (!probe.available) throw new Error(`driver unavailable: ${probe.problems.join('; ')}`);
  tier = probe.tierId;
  sandboxes[name] = new WorkspaceSandbox({
    driver,
    workspaceRoot: path.dirname(repo),
    workspaceFor: () => repo,
    approvalGate,
  });
}
const execTimes = Object.fromEntries(Object.keys(variants).map((k) => [k, []]));
for (let round = 0; round < ROUNDS; round++) {
  for (const [name, sandbox] of Object.entries(sandboxes)) {
    for (let i = 0; i < PER_ROUND / 2; i++) {
      const t0 = process.hrtime.bigint();
      const out = await sandbox.execute({ sessionId: 'bench', program: '/bin/true' });
      execTimes[name].push(ms(t0));
      if (out.exitCode !== 0) throw new Error(`${name}: ${out.stderrText}`);
    }
  }
}
const noGuard = median(execTimes['no guard (protectedPaths: [])']);
console.log(`2. execute(/bin/true) in that repository, tier ${tier} (medians)`);
for (const [name, times] of Object.entries(execTimes))
  console.log(
    `   ${name.padEnd(34)} ${median(times).toFixed(2)} ms  (${(median(times) / noGuard).toFixed(3)}x, +${(median(times) - noGuard).toFixed(2)} ms)`,
  );
for (const s of Object.values(sandboxes)) await s.dispose();
rmSync(base, { recursive: true, force: true });
