// The cost of home protection: execute(/bin/true) with a write grant of a realistic home (a dozen dotfiles
// and config directories present, the rest of the list absent), with the default home list against the
// list before attack round 34 (31 entries), interleaved in one process. Also a run with no home grant,
// for scale. Reproduce: node packages/driver-linux/bench/home.bench.mjs   (BENCH_ROUNDS, BENCH_PER_ROUND)
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ApprovalGate, DEFAULT_HOME_PROTECTED_PATHS, WorkspaceSandbox } from '@aleph/sandbox-core';
import { createLinuxDriver } from '../dist/index.js';
import { interleave, median } from './interleave.mjs';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 6);
const PER_ROUND = Number(process.env.BENCH_PER_ROUND ?? 30);
/** The home list before attack round 34. */
const BEFORE = [
  '.bashrc',
  '.bash_profile',
  '.bash_login',
  '.bash_logout',
  '.profile',
  '.zshrc',
  '.zshenv',
  '.zprofile',
  '.zlogin',
  '.zlogout',
  '.config/fish',
  '.gitconfig',
  '.config/git',
  '.ssh',
  '.npmrc',
  '.yarnrc',
  '.yarnrc.yml',
  '.pypirc',
  '.config/pip',
  '.pip',
  '.local/bin',
  '.config/autostart',
  '.config/systemd',
  '.vscode',
  '.idea',
  '.claude',
  '.cursor',
  '.mcp.json',
  '.codex',
  '.agents',
  '.aleph',
];
const base = mkdtempSync(path.join(os.tmpdir(), 'aleph-bench-home-'));
const home = path.join(base, 'home');
const ws = path.join(base, 'ws');
mkdirSync(ws);
// A realistic home: what a developer's has of the list.
for (const d of [
  '.ssh',
  '.config/git',
  '.config/nvim',
  '.local/bin',
  '.local/lib',
  '.cargo/bin',
  '.vim',
  '.gnupg',
  '.aws',
  '.kube',
  '.docker',
  '.config/gh',
  '.vscode',
])
  mkdirSync(path.join(home, d), { recursive: true });
for (const f of [
  '.bashrc',
  '.profile',
  '.gitconfig',
  '.vimrc',
  '.inputrc',
  '.tmux.conf',
  '.kube/config',
  '.docker/config.json',
  '.cargo/env',
  '.npmrc',
  '.ssh/config',
])
  writeFileSync(path.join(home, f), '# x\n');
process.env.HOME = home;
const approvalGate = new ApprovalGate({
  requester: { requestApproval: async () => ({ outcome: 'approved' }) },
});
const sandboxFor = (homeProtectedPaths) =>
  new WorkspaceSandbox({
    driver: createLinuxDriver({ homeProtectedPaths }),
    workspaceRoot: ws,
    approvalGate,
  });
const sandboxes = { before: sandboxFor(BEFORE), after: sandboxFor([...DEFAULT_HOME_PROTECTED_PATHS]) };
const grant = { fsWrite: [home] };
const variants = {
  'no home grant (default list)': () => sandboxes.after.execute({ sessionId: 'bench', program: '/bin/true' }),
  [`home grant, list before (${BEFORE.length})`]: () =>
    sandboxes.before.execute({ sessionId: 'bench', program: '/bin/true', capabilities: grant }),
  [`home grant, default list (${DEFAULT_HOME_PROTECTED_PATHS.length})`]: () =>
    sandboxes.after.execute({ sessionId: 'bench', program: '/bin/true', capabilities: grant }),
};
for (const fn of Object.values(variants)) {
  const r = await fn();
  if (r.exitCode !== 0) throw new Error(`execute failed: ${Buffer.from(r.stderr).toString()}`);
}
const { samples, rounds } = await interleave(variants, { rounds: ROUNDS, perRound: PER_ROUND });
const keys = Object.keys(variants);
console.log(
  `home protection (node ${process.version}, ${os.cpus().length} cores, uid ${process.getuid()}): median of ${ROUNDS * PER_ROUND} interleaved runs`,
);
for (const k of keys) console.log(`  ${k.padEnd(40)} ${median(samples[k]).toFixed(2).padStart(7)} ms`);
const [, b, a] = keys;
const rs = rounds[a].map((xs, i) => median(xs) / median(rounds[b][i]));
console.log(
  `  default list / list before: ${(median(samples[a]) / median(samples[b])).toFixed(3)}x (rounds ${Math.min(...rs).toFixed(3)}–${Math.max(...rs).toFixed(3)})`,
);
for (const s of Object.values(sandboxes)) await s.dispose();
rmSync(base, { recursive: true, force: true });
