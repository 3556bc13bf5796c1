// What the check after the run costs in a large tree (issue 23 §2, issue 38 §5): execute(/bin/true) in a
// git repository whose node_modules holds about 1.5k, 5k and 60k directories, as a ratio to the same in an
// empty workspace, measured in the same run, interleaved (rounds of each workspace in turn). Three times:
// as root with the change journal where this host can keep one (fanotify: the cost follows what the
// command changed); as root with the complete walk (option changeJournal: false); and, when this is root,
// as an unprivileged uid (BENCH_AS, 65534) through setpriv in a child process over the same trees, where
// no journal can be kept: the fork server's change watcher keeps fanotify inode marks between runs instead
// (its first runs in a tree walk while it marks), and, for comparison, with changeJournal: false (the walk). Goal (issue 38): <= 1.1x at 5k and <= 1.2x at 60k
// as root and as the unprivileged uid.
// The node_modules trees are real packages: this checkout's node_modules/.pnpm copied with hard links
// (`cp -al`: directories made, files linked), as many times as the size needs.
// Reproduce: pnpm --filter @aleph/driver-linux bench   (BENCH_ROUNDS, BENCH_PER_ROUND, BENCH_TREE_SIZES,
// BENCH_AS; BENCH_AS= for no unprivileged run). Alone: node packages/driver-linux/bench/tree.bench.mjs
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ApprovalGate, WorkspaceSandbox } from '@aleph/sandbox-core';
import { createLinuxDriver } from '../dist/index.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 4);
const PER_ROUND = Number(process.env.BENCH_PER_ROUND ?? 6);
const SIZES = (process.env.BENCH_TREE_SIZES ?? '1500,5000,60000').split(',').map(Number);
const AS = process.env.BENCH_AS ?? '65534';
/** Set in the unprivileged child: the trees the root run made, and a state directory of its own. */
const CHILD =
  process.env.BENCH_TREE_CHILD === undefined ? undefined : JSON.parse(process.env.BENCH_TREE_CHILD);
const STORE = fileURLToPath(new URL('../../../node_modules/.pnpm', import.meta.url));

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

function makeRepo(scratch, name) {
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

const approvalGate = new ApprovalGate({
  requester: { requestApproval: async () => ({ outcome: 'approved' }) },
});
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
/** Goals per tree size (issue 38), for the journal as root and the walk as an unprivileged uid. */
const GOALS = { 5000: 1.1, 60000: 1.2 };

/**
 * Times execute(/bin/true) in each workspace for each method (label → changeJournal option; state
 * directories under `stateBase`), interleaved, and prints one line per method and workspace.
 */
async function measure(workspaces, legs, stateBase) {
  const methods = {};
  for (const [method, changeJournal] of legs) {
    // Short: the fork server's socket lives in it, and a Unix socket's path has at most 107 bytes (a longer
    // one would leave these runs without the fork server, and so without the change watcher).
    const stateDir = mkdtempSync(path.join(stateBase, `s-${method.slice(0, 4)}-`));
    const driver = createLinuxDriver({ changeJournal, stateDir });
    methods[method] = {
      // workspaceFor: the session's workspace is the tree itself (not a directory of its own beneath it).
      sandboxes: workspaces.map(
        (w) =>
          new WorkspaceSandbox({ driver, workspaceRoot: w.dir, workspaceFor: () => w.dir, approvalGate }),
      ),
    };
  }
  const probe = await createLinuxDriver().probe();
  if (!probe.available) throw new Error(`driver unavailable: ${probe.problems.join('; ')}`);
  const seen = {};
  const why = {};
  const once = async (method, i) => {
    const r = await methods[method].sandboxes[i].execute({ sessionId: `tree-${i}`, program: '/bin/true' });
    if (r.exitCode !== 0) throw new Error(`execute(/bin/true) failed: ${Buffer.from(r.stderr).toString()}`);
    seen[`${method} ${i}`] = r.details?.afterRun?.method;
    why[`${method} ${i}`] = r.details?.afterRun?.walked?.join('; ');
  };
  const samples = {};
  const roundMedians = {};
  for (const method of Object.keys(methods))
    for (let i = 0; i < workspaces.length; i++) {
      // Warm-up: plans, registries of git directories; and, where the check is by a journal, until it is
      // (an unprivileged host's change watcher marks a tree in the background after its first run there).
      for (
        let k = 0;
        k < 3 || (!method.endsWith('walk') && seen[`${method} ${i}`] !== 'journal' && k < 100);
        k++
      )
        await once(method, i);
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
    `  uid ${process.getuid()}, tier ${probe.tier}: execute(/bin/true), median of ${ROUNDS * PER_ROUND} interleaved runs; ratio to the empty workspace:`,
  );
  for (const method of Object.keys(methods)) {
    const base = median(samples[`${method} 0`]);
    for (let i = 0; i < workspaces.length; i++) {
      const key = `${method} ${i}`;
      const v = median(samples[key]);
      const rs = roundMedians[key].map((x, r) => x / roundMedians[`${method} 0`][r]);
      const size = workspaces[i].size;
      const goal = !method.endsWith('walk') && GOALS[size] !== undefined ? GOALS[size] : undefined;
      console.log(
        `    ${method.padEnd(12)} ${workspaces[i].label.padEnd(20)} ${String(workspaces[i].dirs).padStart(6)} dirs ${v.toFixed(2).padStart(8)} ms ${(v / base).toFixed(2).padStart(6)}x (rounds ${Math.min(...rs).toFixed(2)}–${Math.max(...rs).toFixed(2)}; check by ${seen[key] ?? '?'}${why[key] === undefined ? '' : `: ${why[key]}`})${goal === undefined ? '' : ` (goal <= ${goal}x) ${v / base <= goal ? 'met' : 'NOT met'}`}`,
      );
    }
  }
  for (const m of Object.values(methods)) for (const s of m.sandboxes) await s.dispose();
}

if (CHILD !== undefined) {
  // The unprivileged run: the root run's trees (read-only here), its own state directory.
  await measure(
    CHILD.workspaces,
    [
      ['unprivileged', undefined],
      ['unpriv-walk', false],
    ],
    CHILD.stateBase,
  );
} else {
  const scratch = mkdtempSync(path.join(os.tmpdir(), 'aleph-bench-tree-'));
  try {
    chmodSync(scratch, 0o755); // the unprivileged run reads the same trees
    const entries = storeEntries();
    const empty = path.join(scratch, 'empty');
    mkdirSync(empty);
    const workspaces = [{ label: 'empty workspace', dir: empty, dirs: 1 }];
    for (const size of SIZES) {
      const dir = makeRepo(scratch, `nm-${size}`);
      workspaces.push({
        label: `node_modules ~${size}`,
        dir,
        size,
        dirs: fillNodeModules(dir, size, entries),
      });
    }
    console.log(
      `@aleph/driver-linux check after the run by tree size (node ${process.version}, ${os.cpus().length} cores, kernel ${os.release()})`,
    );
    await measure(
      workspaces,
      [
        ['journal', true],
        ['walk', false],
      ],
      scratch,
    );
    if (process.getuid() === 0 && AS !== '') {
      const stateBase = path.join(scratch, `as-${AS}`);
      mkdirSync(stateBase, { mode: 0o755 });
      chownSync(stateBase, Number(AS), Number(AS));
      const r = spawnSync(
        'setpriv',
        [
          `--reuid=${AS}`,
          `--regid=${AS}`,
          '--clear-groups',
          process.execPath,
          fileURLToPath(import.meta.url),
        ],
        {
          env: {
            ...process.env,
            HOME: stateBase,
            BENCH_TREE_CHILD: JSON.stringify({ workspaces, stateBase }),
          },
          stdio: 'inherit',
        },
      );
      if (r.status !== 0) process.exitCode = 1;
    }
    console.log(
      '  reproduce: pnpm --filter @aleph/driver-linux bench   (this one alone: node bench/tree.bench.mjs)',
    );
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}
