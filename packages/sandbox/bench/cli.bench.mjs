// The CLI's cost: `aleph-sandbox run -- /bin/true` wall time against `node -e 0` (target <= 2x), measured
// interleaved in the same run. Library-mode overhead is in @aleph/driver-linux's bench.
// Reproduce: pnpm --filter @aleph/sandbox bench
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const cli = fileURLToPath(new URL('../dist/cli-bundle/aleph-sandbox.cjs', import.meta.url));
const home = mkdtempSync(path.join(os.tmpdir(), 'aleph-cli-bench-'));
const env = { ...process.env, HOME: home };
process.on('exit', () => rmSync(home, { recursive: true, force: true }));
const variants = {
  'node -e 0': [process.execPath, ['-e', '0']],
  'aleph-sandbox run -- /bin/true': [process.execPath, [cli, 'run', '--', '/bin/true']],
  'aleph-sandbox --version': [process.execPath, [cli, '--version']],
};
const samples = Object.fromEntries(Object.keys(variants).map((k) => [k, []]));
for (const [file, args] of Object.values(variants)) spawnSync(file, args, { env, stdio: 'ignore' });
for (let round = 0; round < 10; round++) {
  for (const [name, [file, args]] of Object.entries(variants)) {
    for (let i = 0; i < 3; i++) {
      const t = performance.now();
      const r = spawnSync(file, args, { env, stdio: ['ignore', 'ignore', 'inherit'] });
      if (r.status !== 0) throw new Error(`${name} exited ${r.status}`);
      samples[name].push(performance.now() - t);
    }
  }
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const m = Object.fromEntries(Object.entries(samples).map(([k, v]) => [k, median(v)]));
console.log(
  `@aleph/sandbox CLI (node ${process.version}, ${os.cpus().length} cores), median of 30 interleaved runs:`,
);
for (const [k, v] of Object.entries(m)) console.log(`  ${k.padEnd(34)} ${v.toFixed(1).padStart(7)} ms`);
const ratio = m['aleph-sandbox run -- /bin/true'] / m['node -e 0'];
console.log(`  run / node -e 0: ${ratio.toFixed(2)}x (target <= 2x) ${ratio <= 2 ? 'met' : 'NOT met'}`);
console.log(
  `  loading the CLI alone (--version) costs ${(m['aleph-sandbox --version'] - m['node -e 0']).toFixed(1)} ms over node -e 0`,
);
console.log('  reproduce: pnpm --filter @aleph/sandbox bench');
