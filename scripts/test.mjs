#!/usr/bin/env node
// Runs the whole suite (building first, because the CLI e2e tests run the built bins), then prints what
// was skipped and why, and a closing `N passed, N failed` line that CI reads.
//
// The suite runs as two vitest runs side by side, each one file at a time (vitest's default of one worker
// on two cores): the e2e tests that run sandboxes on this host (e2e/linux, e2e/sandbox, e2e/containers),
// one after another as before, and, at a lower CPU priority, everything else (the packages' tests and
// e2e/consumer). Together they are every test file; a file found in both fails the run. With file
// arguments, one vitest run as given.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const report = path.join(root, '.test-results.json');
const env = { ...process.env, TURBO_TELEMETRY_DISABLED: '1' };

if (!process.argv.includes('--no-build')) {
  const build = spawnSync('pnpm', ['--loglevel', 'silent', 'run', 'build'], {
    cwd: root,
    stdio: 'inherit',
    env,
    shell: process.platform === 'win32',
  });
  if (build.status !== 0) {
    console.log('build failed: 0 passed, 1 failed');
    process.exit(1);
  }
}

// Static checks count as tests: a type error or a lint finding fails the suite like a failing test.
// So does the leak check after the run.
const staticFailures = [];
if (!process.argv.includes('--no-static')) {
  for (const [label, args] of [
    [
      'typecheck (tsc -p tsconfig.json)',
      [path.join(root, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.json'],
    ],
    ['lint (biome ci)', [path.join(root, 'node_modules/@biomejs/biome/bin/biome'), 'ci', '.']],
  ]) {
    const r = spawnSync(process.execPath, args, { cwd: root, stdio: 'inherit', env });
    console.log(`${r.status === 0 ? '✓' : '×'} ${label}`);
    if (r.status !== 0) staticFailures.push(label);
  }
}

// What the tests leave behind counts too: every temp directory a test or the code under test makes is
// named aleph-…, and every one must be gone when the suite ends (as must any mount made for a sandbox).
const leftovers = () => {
  const dirs = readdirSync(os.tmpdir()).filter((n) => n.startsWith('aleph-'));
  const mounts =
    process.platform === 'linux'
      ? readFileSync('/proc/self/mounts', 'utf8')
          .split('\n')
          .filter((l) => l.includes('aleph'))
      : [];
  return new Set([...dirs.map((d) => path.join(os.tmpdir(), d)), ...mounts.map((m) => `mount: ${m}`)]);
};
const before = leftovers();

rmSync(report, { force: true });
const extra = process.argv.slice(2).filter((a) => a !== '--no-build' && a !== '--no-static');
// The e2e folders that run sandboxes on this host: the e2e project's files but e2e/consumer. An e2e folder
// in neither list runs in both lanes, which fails the run and names it.
const SANDBOX_DIRS = ['e2e/linux', 'e2e/sandbox', 'e2e/containers'];
// The sandbox lane keeps vitest's default worker count (cores - 1); the shorter one takes a third of it,
// so that a machine with more cores is not much more oversubscribed than one vitest run made it.
const cores = os.availableParallelism?.() ?? os.cpus().length;
const restWorkers = Math.max(1, Math.floor((cores - 1) / 3));
const lanes =
  extra.length > 0
    ? [{ name: 'all', args: extra }]
    : [
        { name: 'sandbox', args: ['--project', 'e2e', '--exclude', 'e2e/consumer/**'] },
        {
          name: 'rest',
          args: [...SANDBOX_DIRS.flatMap((d) => ['--exclude', `${d}/**`]), `--maxWorkers=${restWorkers}`],
        },
      ];

/** One vitest run; the first lane prints as it goes, the others all at once when they end. */
function runLane(lane, i) {
  const out = lanes.length === 1 ? report : path.join(root, `.test-results.${lane.name}.json`);
  rmSync(out, { force: true });
  const args = [
    path.join(root, 'node_modules/vitest/vitest.mjs'),
    'run',
    '--reporter=default',
    '--reporter=json',
    `--outputFile.json=${out}`,
    ...lane.args,
  ];
  const live = i === 0;
  const child = spawn(process.execPath, args, {
    cwd: root,
    stdio: live ? 'inherit' : ['ignore', 'pipe', 'pipe'],
    env,
  });
  const chunks = [];
  if (!live) {
    // Behind the first lane for the CPU (its processes inherit this): the sandbox tests are the longer
    // lane, and some of them poll the host while a command runs.
    try {
      if (child.pid !== undefined) os.setPriority(child.pid, 10);
    } catch {
      // not allowed here: both lanes at the same priority
    }
    child.stdout.on('data', (c) => chunks.push(c));
    child.stderr.on('data', (c) => chunks.push(c));
  }
  return new Promise((resolve) => {
    child.on('error', (e) => chunks.push(Buffer.from(`${e.message}\n`)));
    child.on('close', (status) => {
      if (!live) {
        process.stdout.write(
          `\n── lane '${lane.name}' (vitest run ${lane.args.join(' ')}), run alongside: ──\n${Buffer.concat(chunks)}\n`,
        );
      }
      resolve({ lane, out, status: status ?? 1 });
    });
  });
}

const ran = await Promise.all(lanes.map(runLane));
const missing = ran.filter((r) => !existsSync(r.out));
if (missing.length > 0) {
  console.log(
    `vitest wrote no report (lane ${missing.map((r) => r.lane.name).join(', ')}): 0 passed, 1 failed`,
  );
  process.exit(missing[0].status || 1);
}
const laneResults = ran.map((r) => JSON.parse(readFileSync(r.out, 'utf8')));
const results = {
  ...laneResults[0],
  testResults: laneResults.flatMap((r) => r.testResults ?? []),
  startTime: Math.min(...laneResults.map((r) => r.startTime)),
  success: laneResults.every((r) => r.success),
};
for (const k of Object.keys(results).filter((k) => /^num[A-Z]/.test(k)))
  results[k] = laneResults.reduce((n, r) => n + (r[k] ?? 0), 0);
if (lanes.length > 1) {
  writeFileSync(report, JSON.stringify(results));
  for (const r of ran) rmSync(r.out, { force: true });
}
const vitestStatus = Math.max(...ran.map((r) => r.status));
const files = results.testResults.map((f) => f.name);
const twice = files.filter((f, i) => files.indexOf(f) !== i);
for (const f of twice)
  console.log(`ran in both lanes: ${path.relative(root, f)} (give its folder one lane in scripts/test.mjs)`);
const skipped = [];
for (const file of results.testResults ?? []) {
  for (const t of file.assertionResults ?? []) {
    if (t.status === 'pending' || t.status === 'skipped' || t.status === 'todo') {
      skipped.push(`${path.relative(root, file.name)} > ${t.fullName}`);
    }
  }
}
if (skipped.length > 0) {
  console.log(`\nskipped (${skipped.length}); the reason is in each name:`);
  for (const s of skipped) console.log(`  - ${s}`);
}
const left = [...leftovers()].filter((x) => !before.has(x));
const leakCheck = 'nothing left behind (temp directories, mounts)';
console.log(`${left.length === 0 ? '✓' : '×'} ${leakCheck}`);
for (const x of left) console.log(`  left behind: ${x}`);
if (left.length > 0) staticFailures.push(leakCheck);

// A file that failed without a failing test (an error at load time, or in a beforeAll that left every
// test skipped) counts as one failure.
const failedSuites = (results.testResults ?? []).filter(
  (f) => f.status === 'failed' && !(f.assertionResults ?? []).some((t) => t.status === 'failed'),
);
const failed = results.numFailedTests + failedSuites.length + staticFailures.length + twice.length;
const passed =
  results.numPassedTests + (process.argv.includes('--no-static') ? 1 : 3) - staticFailures.length;
// The failures again, last, with the first lines of each message: a log read from its end shows them.
const failures = [];
for (const file of results.testResults ?? []) {
  const rel = path.relative(root, file.name);
  for (const t of file.assertionResults ?? []) {
    if (t.status === 'failed') failures.push([`${rel} > ${t.fullName}`, t.failureMessages?.[0]]);
  }
}
for (const f of failedSuites) failures.push([path.relative(root, f.name), f.message]);
if (failures.length > 0) {
  console.log(`\nfailed (${failures.length}):`);
  for (const [name, message] of failures) {
    console.log(`  × ${name}`);
    const lines = String(message ?? '')
      .replace(/\x1b\[[0-9;]*m/g, '')
      .split('\n')
      .filter((l) => l.trim() !== '' && !/^\s+at /.test(l));
    for (const line of lines.slice(0, 6)) console.log(`      ${line.slice(0, 400)}`);
  }
}
for (const f of staticFailures) console.log(`failed check: ${f}`);
console.log(`\n${passed} passed, ${failed} failed`);
process.exit(failed > 0 || vitestStatus !== 0 ? 1 : 0);
