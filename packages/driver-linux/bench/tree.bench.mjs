// What the check after the run costs in a large tree (issue 23 §2): execute(/bin/true) in a git repository
// whose node_modules holds about 1.5k, 5k and 60k directories, as a ratio to the same in an empty
// workspace, measured in the same run, interleaved (rounds of each workspace in turn). Twice: with the
// change journal where this host can keep one (a root host: fanotify, the cost follows what the command
// changed), and with the complete walk (option changeJournal: false; what a host without the journal
// pays). Goal: <= 1.2x at 5k and <= 1.5x at 60k with the journal.
// The node_modules trees are real packages: this checkout's node_modules/.pnpm copied with hard links
// (`cp -al`: directories made, files linked), as many times as the size needs.
// Reproduce: pnpm --filter @aleph/driver-linux bench   (BENCH_ROUNDS, BENCH_PER_ROUND, BENCH_TREE_SIZES)
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ApprovalGate, WorkspaceSandbox } from '@aleph/sandbox-core';
import { createLinuxDriver } from '../dist/index.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 4);
const PER_ROUND = Number(process.env.BENCH_PER_ROUND ?? 6);
const SIZES = (process.env.BENCH_TREE_SIZES ?? '1500,5000,60000').split(',').map(Number);
const STORE = fileURLToPath(new URL('../../../node_modules/.pnpm', import.meta.url));
const scratch = mkdtempSync(path.join(os.tmpdir(), 'aleph-bench-tree-'));

/** Directories under `dir`, itself included (GNU find, no symlinks followed). */
const countDirs = (dir) =>
  Number(execFileSync('sh', ['-c', 'find "$1" -type d | wc -l', 'sh', dir], { encoding: 'utf8' }).trim());

/** The store's top-level entries with their directory counts (computed once). */
function storeEntries() {
  const out = [];
  for (const name of readdirSync(STORE).sort()) {
    const p = path.join(STORE, name);
    out.push({ path: p, dirs: countDirs(p) });
  }
  return out;
}

/** `into/node_modules` with about `target` directories: whole copies of the store, then a part of one. */
function fillNodeModules(into, target, entries) {
  const nm = path.join(into, 'node_modules');
  mkdirSync(nm);
  if (entries.length === 0) throw new Error(`no packages in ${STORE}: run pnpm install first`);
  let left = target - 1;
  for (let copy = 0; left > 0; copy++) {
    const dest = path.join(nm, `.pnpm-${copy}`);
    mkdirSync(dest);
    left -= 1;
    const picked = [];
    for (const e of entries) {
      if (left <= 0) break;
      picked.push(e.path);
      left -= e.dirs;
    }
    execFileSync('cp', ['-al', ...picked, dest]);
  }
  return countDirs(nm);
}

function makeRepo(name) {
  const dir = path.join(scratch, name);
  mkdirSync(path.join(dir, 'src'), { recursive: true });
  const git = (...args) =>
    execFileSync('git', ['-c', 'user.name=bench', '-c', 'user.email=bench@example.invalid', ...args], {
      cwd: dir,
      stdio: 'ignore',
    });
  git('init', '-q', '-b', 'main');
  for (let i = 0; i < 20; i++)
    writeFileSync(path.join(dir, 'src', `m${i}.ts`), `export const x${i} = ${i};\n`);
  writeFileSync(path.join(dir, 'package.json'), '{ "name": "bench-tree", "version": "1.0.0" }\n');
  writeFileSync(path.join(dir, '.gitignore'), 'node_modules/\n');
  git('add', '-A');
  git('commit', '-q', '-m', 'initial');
  return dir;
}

const entries = storeEntries();
const empty = path.join(scratch, 'empty');
mkdirSync(empty);
const workspaces = [{ label: 'empty workspace', dir: empty, dirs: 1 }];
for (const size of SIZES) {
  const dir = makeRepo(`nm-${size}`);
  workspaces.push({ label: `node_modules ~${size}`, dir, dirs: fillNodeModules(dir, size, entries) });
}

const approvalGate = new ApprovalGate({
  requester: { requestApproval: async () => ({ outcome: 'approved' }) },
});
const methods = {};
for (const [method, changeJournal] of [
  ['journal', true],
  ['walk', false],
]) {
  const stateDir = mkdtempSync(path.join(os.tmpdir(), `aleph-bench-tree-state-${method}-`));
  const driver = createLinuxDriver({ changeJournal, stateDir });
  methods[method] = {
    stateDir,
    // workspaceFor: the session's workspace is the tree itself (not a directory of its own beneath it).
    sandboxes: workspaces.map(
      (w) => new WorkspaceSandbox({ driver, workspaceRoot: w.dir, workspaceFor: () => w.dir, approvalGate }),
    ),
  };
}
const probe = await createLinuxDriver().probe();
if (!probe.available) {
  console.log(`driver unavailable: ${probe.problems.join('; ')}`);
  process.exit(1);
}

const seen = {};
const once = async (method, i) => {
  const r = await methods[method].sandboxes[i].execute({ sessionId: `tree-${i}`, program: '/bin/true' });
  if (r.exitCode !== 0) throw new Error(`execute(/bin/true) failed: ${Buffer.from(r.stderr).toString()}`);
  seen[`${method} ${i}`] = r.details?.afterRun?.method;
};
const samples = {};
const roundMedians = {};
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
for (const method of Object.keys(methods))
  for (let i = 0; i < workspaces.length; i++) {
    for (let k = 0; k < 3; k++) await once(method, i); // warm-up: plans, registries of git directories
    samples[`${method} ${i}`] = [];
    roundMedians[`${method} ${i}`] = [];
  }
for (let round = 0; round < ROUNDS; round++)
  for (const method of Object.keys(methods))
    for (let i = 0; i < workspaces.length; i++) {
      const xs = [];
      for (let k = 0; k < PER_ROUND; k++) {
        const t = performance.now();
        await once(method, i);
        xs.push(performance.now() - t);
      }
      samples[`${method} ${i}`].push(...xs);
      roundMedians[`${method} ${i}`].push(median(xs));
    }

console.log(
  `@aleph/driver-linux check after the run by tree size (node ${process.version}, ${os.cpus().length} cores, kernel ${os.release()}; tier ${probe.tier}; uid ${process.getuid()})`,
);
console.log(
  `  execute(/bin/true), median of ${ROUNDS * PER_ROUND} interleaved runs; ratio to the empty workspace:`,
);
const goals = { 5000: 1.2, 60000: 1.5 };
for (const method of Object.keys(methods)) {
  const base = median(samples[`${method} 0`]);
  for (let i = 0; i < workspaces.length; i++) {
    const key = `${method} ${i}`;
    const v = median(samples[key]);
    const rs = roundMedians[key].map((x, r) => x / roundMedians[`${method} 0`][r]);
    const size = SIZES[i - 1];
    const goal = method === 'journal' && goals[size] !== undefined ? goals[size] : undefined;
    console.log(
      `    ${method.padEnd(7)} ${workspaces[i].label.padEnd(20)} ${String(workspaces[i].dirs).padStart(6)} dirs ${v.toFixed(2).padStart(8)} ms ${(v / base).toFixed(2).padStart(6)}x (rounds ${Math.min(...rs).toFixed(2)}–${Math.max(...rs).toFixed(2)}; check by ${seen[key] ?? '?'})${goal === undefined ? '' : ` (goal <= ${goal}x) ${v / base <= goal ? 'met' : 'NOT met'}`}`,
    );
  }
}
console.log('  reproduce: pnpm --filter @aleph/driver-linux bench');

for (const m of Object.values(methods)) {
  for (const s of m.sandboxes) await s.dispose();
  rmSync(m.stateDir, { recursive: true, force: true });
}
rmSync(scratch, { recursive: true, force: true });
