#!/usr/bin/env node
// Runs the whole suite (building first, because the CLI e2e tests run the built bins), then prints what
// was skipped and why, and a closing `N passed, N failed` line that CI reads.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
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
const vitest = spawnSync(
  process.execPath,
  [
    path.join(root, 'node_modules/vitest/vitest.mjs'),
    'run',
    '--reporter=default',
    '--reporter=json',
    `--outputFile.json=${report}`,
    ...extra,
  ],
  { cwd: root, stdio: 'inherit', env },
);

if (!existsSync(report)) {
  console.log('vitest wrote no report: 0 passed, 1 failed');
  process.exit(vitest.status || 1);
}
const results = JSON.parse(readFileSync(report, 'utf8'));
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
const failed = results.numFailedTests + failedSuites.length + staticFailures.length;
const passed =
  results.numPassedTests + (process.argv.includes('--no-static') ? 1 : 3) - staticFailures.length;
for (const f of staticFailures) console.log(`failed check: ${f}`);
console.log(`\n${passed} passed, ${failed} failed`);
process.exit(failed > 0 || vitest.status !== 0 ? 1 : 0);
