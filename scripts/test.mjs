#!/usr/bin/env node
// Runs the whole suite (building first, because the CLI e2e tests run the built bins), then prints what
// was skipped and why, and a closing `N passed, N failed` line that CI reads.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
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
const failedSuites = (results.testResults ?? []).filter(
  (f) => f.status === 'failed' && (f.assertionResults ?? []).length === 0,
);
const failed = results.numFailedTests + failedSuites.length + staticFailures.length;
const passed =
  results.numPassedTests + (process.argv.includes('--no-static') ? 0 : 2 - staticFailures.length);
for (const f of staticFailures) console.log(`failed static check: ${f}`);
console.log(`\n${passed} passed, ${failed} failed`);
process.exit(failed > 0 || vitest.status !== 0 ? 1 : 0);
