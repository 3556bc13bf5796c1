// The cost of change recording (issue 38): a command writing FILES small files and one rewriting a
// BIG_MIB file, with recording on against off (two drivers in one process, alternating), and the time of
// undo of each against the command's own. Reproduce: node packages/driver-linux/bench/changes.bench.mjs
// (BENCH_ROUNDS, BENCH_PER_ROUND, BENCH_FILES default 10000, BENCH_BIG_MIB default 100)
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ApprovalGate, WorkspaceSandbox } from '@aleph/sandbox-core';
import { createLinuxDriver } from '../dist/index.js';
import { median } from './interleave.mjs';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const PER_ROUND = Number(process.env.BENCH_PER_ROUND ?? 2);
const FILES = Number(process.env.BENCH_FILES ?? 10_000);
const BIG_MIB = Number(process.env.BENCH_BIG_MIB ?? 100);
const base = mkdtempSync(path.join(os.tmpdir(), 'aleph-bench-changes-'));
const approvalGate = new ApprovalGate({
  requester: { requestApproval: async () => ({ outcome: 'approved' }) },
});
const drivers = {
  on: createLinuxDriver({ stateDir: path.join(base, 'state-on') }),
  off: createLinuxDriver({ stateDir: path.join(base, 'state-off'), changes: { enabled: false } }),
};
const sandboxes = {};
for (const [k, driver] of Object.entries(drivers)) {
  mkdirSync(path.join(base, `ws-${k}`));
  sandboxes[k] = new WorkspaceSandbox({ driver, workspaceRoot: path.join(base, `ws-${k}`), approvalGate });
}
const caps = { spawnSubprocess: true };
// Each run starts from the same tree: the small files go, the big file is written afresh by the command.
const SMALL = `rm -rf small && mkdir small && cd small && i=0; while [ $i -lt ${FILES} ]; do echo $i > f$i; i=$((i+1)); done`;
const BIG = `[ -f big ] || head -c ${BIG_MIB}M /dev/zero | tr '\\0' x > big; dd if=/dev/urandom of=big bs=1M count=${BIG_MIB} conv=notrunc status=none`;
const run = async (k, script) => {
  const out = await sandboxes[k].execute({
    sessionId: 'bench',
    program: 'sh',
    args: ['-c', script],
    capabilities: caps,
    timeout: 600_000,
  });
  if (out.exitCode !== 0) throw new Error(`${k}: ${out.stderrText}`);
  return out;
};
const variants = {
  [`${FILES} small files, recording off`]: () => run('off', SMALL),
  [`${FILES} small files, recording on`]: () => run('on', SMALL),
  [`${BIG_MIB} MiB rewrite, recording off`]: () => run('off', BIG),
  [`${BIG_MIB} MiB rewrite, recording on`]: () => run('on', BIG),
};
/**
 * Each pair (off, on) timed in rounds of its own, the order turned every round (off-on, on-off, …) and the
 * dirty pages of the run before written out (sync, untimed) before each sample: a 100 MiB rewrite's
 * write-back would otherwise land on whichever variant runs after it.
 */
async function pairs() {
  const samples = Object.fromEntries(Object.keys(variants).map((k) => [k, []]));
  const keys = Object.keys(variants);
  for (const pair of [keys.slice(0, 2), keys.slice(2, 4)]) {
    for (const k of pair) await variants[k](); // warm-up
    for (let round = 0; round < ROUNDS * PER_ROUND; round++)
      for (const k of round % 2 === 0 ? pair : [...pair].reverse()) {
        execFileSync('sync');
        const t = performance.now();
        await variants[k]();
        samples[k].push(performance.now() - t);
      }
  }
  return { samples };
}
try {
  const { samples } = await pairs();
  const keys = Object.keys(variants);
  console.log(
    `change recording (node ${process.version}, ${os.cpus().length} cores, uid ${process.getuid()}): median of ${ROUNDS * PER_ROUND} runs each, off and on alternating`,
  );
  for (const k of keys) console.log(`  ${k.padEnd(40)} ${median(samples[k]).toFixed(1).padStart(9)} ms`);
  for (const [off, on] of [
    [keys[0], keys[1]],
    [keys[2], keys[3]],
  ])
    console.log(
      `  ${on.replace(', recording on', '')}: on / off ${(median(samples[on]) / median(samples[off])).toFixed(3)}x (goal <= 1.3x)`,
    );
  // Undo of each workload against the command's own time.
  for (const [name, script] of [
    [`${FILES} small files`, SMALL],
    [`${BIG_MIB} MiB rewrite`, BIG],
  ]) {
    execFileSync('sync');
    const t0 = performance.now();
    const out = await run('on', script);
    const ran = performance.now() - t0;
    execFileSync('sync');
    const t1 = performance.now();
    const u = await drivers.on.undo({ runId: out.details.runId, force: false });
    const undone = performance.now() - t1;
    if (!u.undone) throw new Error(`undo of ${name} failed: ${JSON.stringify(u.conflicts.slice(0, 3))}`);
    console.log(
      `  undo of ${name.padEnd(24)} ${undone.toFixed(1).padStart(9)} ms (the command: ${ran.toFixed(1)} ms, ${(undone / ran).toFixed(3)}x)`,
    );
  }
} finally {
  for (const s of Object.values(sandboxes)) await s.dispose();
  for (const d of Object.values(drivers)) await d.dispose();
  rmSync(base, { recursive: true, force: true });
}
