// The CLI's cost: `aleph-sandbox run -- /bin/true` wall time against `node -e 0` (target <= 1.5x), measured
// interleaved in the same run (the warm-up run fills the host cache in ~/.aleph/run, as a user's first
// run does, so the measured runs neither probe nor run a preflight), beside two floors: node spawning bare bwrap, and the least a run can do
// with the libraries the issues name (bench/floor-entry.mjs). Library-mode overhead is in @aleph/driver-linux's bench.
// The peer's CLI (`srt /bin/true`, @anthropic-ai/sandbox-runtime, installed into <repo>/bench/.peer by the
// driver benchmark's peer.mjs) is measured in the same rounds, with its default settings and a fresh HOME;
// where it cannot be installed or does not run here, the line says why and the other ratios still print.
// Reproduce: pnpm --filter @aleph/sandbox bench
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensurePeer, PEER_DIR } from '../../driver-linux/bench/peer.mjs';
import { bundleCommand } from '../scripts/cjs-bundle.mjs';

const pkg = fileURLToPath(new URL('..', import.meta.url));
const cli = path.join(pkg, 'dist/cli-bundle/aleph-sandbox.cjs');
const home = mkdtempSync(path.join(os.tmpdir(), 'aleph-cli-bench-'));
// NODE_EXTRA_CA_CERTS makes every Node start parse the CA file (tens of ms here), the baseline's included,
// which would flatter every ratio: it is left out of every variant.
const { NODE_EXTRA_CA_CERTS: extraCerts, ...inherited } = process.env;
const env = { ...inherited, HOME: home };
// The floor (bench/floor-entry.mjs), bundled as the CLI is and started through a copy of its loader. It
// lives inside the package so that it finds re2 where the CLI does.
const floorDir = path.join(pkg, 'dist/bench-floor');
process.on('exit', () => {
  rmSync(home, { recursive: true, force: true });
  rmSync(floorDir, { recursive: true, force: true });
});
const floor = await bundleCommand(path.join(pkg, 'bench/floor-entry.mjs'), floorDir);
const bwrapTrue = ['--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc', '--unshare-all', '/bin/true'];
const variants = {
  'node -e 0': [process.execPath, ['-e', '0']],
  'node spawning bare bwrap': [
    process.execPath,
    ['-e', `require('node:child_process').spawnSync('bwrap', ${JSON.stringify(bwrapTrue)})`],
  ],
  'floor (zod + RE2 policy + execa, bwrap)': [process.execPath, [floor]],
  'aleph-sandbox run -- /bin/true': [process.execPath, [cli, 'run', '--', '/bin/true']],
  'aleph-sandbox --version': [process.execPath, [cli, '--version']],
};
const PEER = 'peer CLI: srt /bin/true';
let peerNote;
try {
  for (const note of ensurePeer()) console.log(`  (${note})`);
  const srt = path.join(PEER_DIR, 'node_modules', '.bin', 'srt');
  const check = spawnSync(srt, ['/bin/true'], { env, encoding: 'utf8', stdio: ['ignore', 'ignore', 'pipe'] });
  if (check.status !== 0)
    throw new Error(`srt /bin/true exited ${check.status}: ${check.stderr.trim().split('\n').pop()}`);
  variants[PEER] = [srt, ['/bin/true']];
} catch (error) {
  peerNote = `the peer's CLI is not measured: ${error.message.split('\n')[0]}`;
}
const samples = Object.fromEntries(Object.keys(variants).map((k) => [k, []]));
for (const [file, args] of Object.values(variants)) spawnSync(file, args, { env, stdio: 'ignore' });
for (let round = 0; round < 10; round++) {
  for (const [name, [file, args]] of Object.entries(variants)) {
    // The peer's CLI takes about a second a run: once a round is enough for its median.
    for (let i = 0; i < (name === PEER ? 1 : 3); i++) {
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
  `@aleph/sandbox CLI (node ${process.version}, ${os.cpus().length} cores), median of 30 interleaved runs (the peer's CLI: 10)${extraCerts === undefined ? '' : ', NODE_EXTRA_CA_CERTS unset for all'}:`,
);
for (const [k, v] of Object.entries(m)) console.log(`  ${k.padEnd(42)} ${v.toFixed(1).padStart(7)} ms`);
const ratio = m['aleph-sandbox run -- /bin/true'] / m['node -e 0'];
console.log(`  run / node -e 0: ${ratio.toFixed(2)}x (target <= 1.5x) ${ratio <= 1.5 ? 'met' : 'NOT met'}`);
const floorRatio = m['floor (zod + RE2 policy + execa, bwrap)'] / m['node -e 0'];
console.log(
  `  floor / node -e 0: ${floorRatio.toFixed(2)}x: what loading the named libraries (zod, RE2, execa) and running bwrap costs before the CLI does anything of its own`,
);
console.log(
  `  bare bwrap from node / node -e 0: ${(m['node spawning bare bwrap'] / m['node -e 0']).toFixed(2)}x`,
);
console.log(
  `  loading the CLI alone (--version) costs ${(m['aleph-sandbox --version'] - m['node -e 0']).toFixed(1)} ms over node -e 0`,
);
if (m[PEER] === undefined) console.log(`  ${peerNote}`);
else {
  const faster = m[PEER] / m['aleph-sandbox run -- /bin/true'];
  console.log(
    `  peer CLI / run: ${faster.toFixed(2)}x faster than the peer's CLI (target >= 4x) ${faster >= 4 ? 'met' : 'NOT met'}`,
  );
}
console.log('  reproduce: pnpm --filter @aleph/sandbox bench');
