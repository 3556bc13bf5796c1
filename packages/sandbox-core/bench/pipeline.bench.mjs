// Pipeline overhead per execute with the fake driver (no process is spawned), against calling the fake
// driver's run() directly in the same run. Reproduce: pnpm --filter @aleph/sandbox-core bench
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseSandboxCommand, strictCapabilities, WorkspaceSandbox } from '../dist/index.js';
import { createFakeDriver } from '../dist/testing.js';

const N = Number(process.env.BENCH_N ?? 100_000);
const root = mkdtempSync(path.join(os.tmpdir(), 'aleph-bench-'));
const driver = createFakeDriver({ keepRequests: false });
const sandbox = new WorkspaceSandbox({ driver, workspaceRoot: root });
const profile = { driver: 'fake', summary: [] };

async function time(label, fn) {
  for (let i = 0; i < 2000; i++) await fn(i); // warm-up
  const t0 = performance.now();
  for (let i = 0; i < N; i++) await fn(i);
  const ms = performance.now() - t0;
  return { label, perSec: (N / ms) * 1000, usPer: (ms * 1000) / N };
}

const direct = await time('fake driver run() alone', () =>
  driver.run({
    sessionId: 's',
    workspace: root,
    program: 'true',
    args: [],
    env: {},
    cwd: root,
    capabilities: strictCapabilities(),
    profile,
    timeoutMs: 1000,
    maxOutputBytes: 1024,
  }),
);
const validateOnly = await time('parseSandboxCommand alone', () =>
  parseSandboxCommand({ sessionId: 's', program: 'true' }),
);
const one = await time('execute(), 1 session', () =>
  sandbox.execute({ sessionId: 's', program: 'true', args: ['a'] }),
);
const many = await time('execute(), 100 sessions', (i) =>
  sandbox.execute({ sessionId: `s${i % 100}`, program: 'true' }),
);

console.log(
  `sandbox-core pipeline, ${N} sequential executes on one core (node ${process.version}, ${os.cpus()[0]?.model})`,
);
for (const r of [direct, validateOnly, one, many]) {
  console.log(
    `  ${r.label.padEnd(28)} ${Math.round(r.perSec).toLocaleString('en-US').padStart(10)} /s  ${r.usPer.toFixed(2).padStart(7)} µs each`,
  );
}
console.log(
  `  pipeline overhead per execute: ${(one.usPer - direct.usPer).toFixed(2)} µs; execute is ${(one.usPer / direct.usPer).toFixed(1)}x a bare driver call`,
);
console.log(
  `  target >= 20,000 executes/s: ${one.perSec >= 20_000 && many.perSec >= 20_000 ? 'met' : 'NOT met'}`,
);
console.log('  reproduce: pnpm --filter @aleph/sandbox-core bench');
rmSync(root, { recursive: true, force: true });
