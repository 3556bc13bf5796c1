// A long build under the process limit (issue 37): one command that starts 10,000 processes, at most 8 at
// once (`seq N | xargs -P 8 -n 50 sh -c …`, each sh running 50 /bin/true one after another), in the
// sandbox (execute, the default max_pids) against the same command started by node outside it through the
// same runner (runBoundedProcess), interleaved round by round (interleave.mjs). It passes only when every
// process started (the count is checked each time) and prints the ratio. Run as root, it runs once as root
// (tier 1) and once more as uid 65534 through setpriv, where the command is in tier 2 (its user namespace's
// RLIMIT_NPROC; before issue 37 the PID namespace's pid_max stopped it after 300).
// Reproduce: node packages/driver-linux/bench/long-build.bench.mjs
//   (BENCH_PROCS=10000, BENCH_JOBS=8, BENCH_ROUNDS=3, BENCH_PER_ROUND=1, BENCH_AS=65534; BENCH_AS= for none)
import { spawnSync } from 'node:child_process';
import { chmodSync, chownSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ApprovalGate, runBoundedProcess, WorkspaceSandbox } from '@aleph/sandbox-core';
import { createLinuxDriver } from '../dist/index.js';
import { interleave, median } from './interleave.mjs';

const PROCS = Number(process.env.BENCH_PROCS ?? 10_000);
const JOBS = Number(process.env.BENCH_JOBS ?? 8);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const PER_ROUND = Number(process.env.BENCH_PER_ROUND ?? 1);
const AS = process.env.BENCH_AS ?? '65534';
const BATCH = 50;

// xargs hands each sh BATCH numbers; sh runs /bin/true once per number and prints how many it ran.
const SCRIPT = `seq ${PROCS} | xargs -P ${JOBS} -n ${BATCH} sh -c 'for _ in "$0" "$@"; do /bin/true; done; echo $(($# + 1))' | awk '{ n += $1 } END { print n }'`;

const base = mkdtempSync(path.join(os.tmpdir(), 'aleph-bench-long-'));
try {
  chmodSync(base, 0o755);
  await measure(base);
  if (process.getuid() === 0 && AS !== '' && process.env.BENCH_LONG_CHILD === undefined) {
    const dir = path.join(base, `as-${AS}`);
    mkdirSync(dir, { mode: 0o755 });
    chownSync(dir, Number(AS), Number(AS));
    const r = spawnSync(
      'setpriv',
      [`--reuid=${AS}`, `--regid=${AS}`, '--clear-groups', process.execPath, fileURLToPath(import.meta.url)],
      { env: { ...process.env, BENCH_LONG_CHILD: dir, HOME: dir }, stdio: 'inherit' },
    );
    if (r.status !== 0) process.exitCode = 1;
  }
} finally {
  rmSync(base, { recursive: true, force: true });
}

/** The interleaved runs in `parent` (or the directory the root run made for this one). */
async function measure(parent) {
  const dir = process.env.BENCH_LONG_CHILD ?? parent;
  const ws = path.join(dir, 'ws');
  mkdirSync(path.join(dir, 'state'), { recursive: true });
  mkdirSync(ws, { recursive: true });
  const sandbox = new WorkspaceSandbox({
    driver: createLinuxDriver({ stateDir: path.join(dir, 'state') }),
    workspaceRoot: ws,
    approvalGate: new ApprovalGate({ requester: { requestApproval: async () => ({ outcome: 'approved' }) } }),
  });
  const expectAll = (text, where) => {
    if (text.trim() !== String(PROCS)) throw new Error(`${where}: ${PROCS} processes expected, got: ${text}`);
  };
  let tier = '';
  const variants = {
    sandbox: async () => {
      const r = await sandbox.execute({
        sessionId: 'bench',
        program: 'sh',
        args: ['-c', SCRIPT],
        capabilities: { spawnSubprocess: true },
        timeout: 600_000,
      });
      tier = String(r.details?.tier);
      expectAll(r.stdoutText, `sandbox (${r.stderrText.trim()})`);
    },
    outside: async () => {
      const r = await runBoundedProcess({
        file: 'sh',
        args: ['-c', SCRIPT],
        env: { PATH: '/usr/bin:/bin' },
        cwd: ws,
        timeoutMs: 600_000,
        maxOutputBytes: 1 << 20,
      });
      expectAll(Buffer.from(r.stdout).toString(), 'outside');
    },
  };
  const { samples, rounds } = await interleave(variants, { rounds: ROUNDS, perRound: PER_ROUND, warmup: 1 });
  const ratio = median(samples.sandbox) / median(samples.outside);
  const rs = rounds.sandbox.map((xs, i) => median(xs) / median(rounds.outside[i]));
  console.log(
    `long build, uid ${process.getuid()}, tier ${tier}: ${PROCS} processes, at most ${JOBS} at once, ${ROUNDS * PER_ROUND} interleaved runs each`,
  );
  console.log(
    `  sandbox ${median(samples.sandbox).toFixed(0)} ms, outside ${median(samples.outside).toFixed(0)} ms: ${ratio.toFixed(2)}x (rounds ${Math.min(...rs).toFixed(2)}–${Math.max(...rs).toFixed(2)})`,
  );
  await sandbox.dispose();
}
