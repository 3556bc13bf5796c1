// The session API's costs, each against a baseline measured in the same run, rounds interleaved:
// 1. spawn() first-byte latency (spawn → first stdout chunk of `/bin/echo x`) vs execute(`/bin/echo x`)
//    (the whole buffered run), through WorkspaceSandbox + the Linux driver;
// 2. with BENCH_MAIN=/path/to/another/checkout (built), execute() of that checkout vs this one, to show
//    the session API did not slow execute() (target: not slower by more than 5 %);
// 3. file read and write of 1 KiB and 10 MiB through session.files vs plain node:fs/promises on the same
//    file system (ratios).
// Reproduce: pnpm --filter @aleph/driver-linux bench   (BENCH_ROUNDS, BENCH_PER_ROUND, BENCH_MAIN)
import { mkdtempSync, rmSync } from 'node:fs';
import { open, readFile, rename, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { ApprovalGate, WorkspaceSandbox } from '@aleph/sandbox-core';
import { createLinuxDriver } from '../dist/index.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 6);
const PER_ROUND = Number(process.env.BENCH_PER_ROUND ?? 30);
const root = mkdtempSync(path.join(os.tmpdir(), 'aleph-bench-session-'));
const approvalGate = new ApprovalGate({
  requester: { requestApproval: async () => ({ outcome: 'approved' }) },
});

async function pipeline(core, linux, name) {
  const driver = linux.createLinuxDriver();
  const probe = await driver.probe();
  if (!probe.available) throw new Error(`${name}: driver unavailable: ${probe.problems.join('; ')}`);
  return new core.WorkspaceSandbox({ driver, workspaceRoot: path.join(root, name), approvalGate });
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
};
const ms = (x) => `${x.toFixed(2)} ms`;

/** Interleaves the named measures round by round; each gives one sample per call. */
async function interleave(measures, rounds = ROUNDS, per = PER_ROUND) {
  const samples = Object.fromEntries(Object.keys(measures).map((k) => [k, []]));
  for (const fn of Object.values(measures)) for (let i = 0; i < 3; i++) await fn(); // warm-up
  for (let r = 0; r < rounds; r++) {
    for (const [k, fn] of Object.entries(measures)) {
      for (let i = 0; i < per; i++) samples[k].push(await fn());
    }
  }
  return Object.fromEntries(Object.entries(samples).map(([k, v]) => [k, median(v)]));
}

const timed = async (fn) => {
  const t0 = performance.now();
  await fn();
  return performance.now() - t0;
};

const sandbox = await pipeline({ WorkspaceSandbox }, { createLinuxDriver }, 'branch');
const session = sandbox.session('bench');
const echo = { program: '/bin/echo', args: ['x'] };

// 1. spawn first byte vs execute.
const firstByte = async () => {
  const t0 = performance.now();
  const proc = await session.spawn(echo);
  const reader = proc.stdout.getReader();
  await reader.read();
  const t = performance.now() - t0;
  reader.releaseLock();
  await proc.wait();
  return t;
};
const one = await interleave({
  execute: () => timed(() => sandbox.execute({ sessionId: 'bench', ...echo })),
  spawnFirstByte: firstByte,
});
console.log(
  `session API on the Linux driver (node ${process.version}, ${os.cpus()[0]?.model}, ${ROUNDS}x${PER_ROUND} interleaved, medians)`,
);
console.log(`  execute(/bin/echo x)            ${ms(one.execute)}`);
console.log(
  `  spawn() to the first stdout byte ${ms(one.spawnFirstByte)}  = ${(one.spawnFirstByte / one.execute).toFixed(2)}x execute`,
);

// 2. execute() of another checkout (main) vs this one.
if (process.env.BENCH_MAIN) {
  const other = path.resolve(process.env.BENCH_MAIN);
  const load = (pkg) => import(pathToFileURL(path.join(other, 'packages', pkg, 'dist', 'index.js')).href);
  const main = await pipeline(await load('sandbox-core'), await load('driver-linux'), 'main');
  const two = await interleave({
    main: () => timed(() => main.execute({ sessionId: 'bench', ...echo })),
    branch: () => timed(() => sandbox.execute({ sessionId: 'bench', ...echo })),
  });
  const slower = (two.branch / two.main - 1) * 100;
  console.log(
    `  execute(): ${other} ${ms(two.main)}, this checkout ${ms(two.branch)}: ${slower >= 0 ? '+' : ''}${slower.toFixed(1)} % (target <= +5 %: ${slower <= 5 ? 'met' : 'NOT met'})`,
  );
  await main.dispose();
}

// 3. files through the API vs plain fs, 1 KiB and 10 MiB.
const plainDir = mkdtempSync(path.join(root, 'plain-'));
/** What an atomic replace costs with plain fs: temp file, write, fsync, rename. */
async function atomicWriteFile(file, data) {
  const temp = `${file}.tmp`;
  const handle = await open(temp, 'w');
  await handle.writeFile(data);
  await handle.sync();
  await handle.close();
  await rename(temp, file);
}
for (const [label, size, per] of [
  ['1 KiB', 1024, PER_ROUND * 4],
  ['10 MiB', 10 * 1024 * 1024, 4],
]) {
  const data = new Uint8Array(size).fill(97);
  const plain = path.join(plainDir, 'f.bin');
  const r = await interleave(
    {
      apiWrite: () => timed(() => session.files.writeFile('f.bin', data)),
      fsWrite: () => timed(() => writeFile(plain, data)),
      fsAtomicWrite: () => timed(() => atomicWriteFile(plain, data)),
      apiRead: () => timed(() => session.files.readFile('f.bin')),
      fsRead: () => timed(() => readFile(plain)),
    },
    ROUNDS,
    per,
  );
  console.log(
    `  files ${label.padEnd(6)} read ${ms(r.apiRead)} vs fs.readFile ${ms(r.fsRead)} = ${(r.apiRead / r.fsRead).toFixed(2)}x; write ${ms(r.apiWrite)} vs fs.writeFile ${ms(r.fsWrite)} = ${(r.apiWrite / r.fsWrite).toFixed(2)}x, vs an atomic fs write (temp, fsync, rename) ${ms(r.fsAtomicWrite)} = ${(r.apiWrite / r.fsAtomicWrite).toFixed(2)}x`,
  );
}
console.log('  reproduce: pnpm --filter @aleph/driver-linux bench');
await sandbox.dispose();
rmSync(root, { recursive: true, force: true });
