// What execute(/bin/true) costs inside real containers (issue 28): in rootful podman/runc containers started
// by .ci/containers/run-in.sh (--network none, the host's /usr and this checkout read-only, /tmp a tmpfs),
// one start per config, the library's execute(/bin/true) (WorkspaceSandbox + this package's built dist, the
// driver opened once and warmed up) against bare `bwrap --ro-bind / / --dev /dev --unshare-all /bin/true`
// (with `--proc /proc` where that mounts, else without; where bwrap cannot run at all, bare /bin/true is the
// baseline, and the line says so) and against /bin/true without any sandbox (a second floor), both spawned
// by node through the same runner (runBoundedProcess), all interleaved round by round, as root in the
// container. Configs: tier1caps, sysadmin, default (see run-in.sh); each line prints the tier the library
// reports in the run's details (`details.tier`), not the one the config is expected to give. In `default`
// also a driver told bwrap is absent (option bwrapPath: a missing file), which is what tier 3 costs there;
// once on the host itself for reference; under gVisor from 2023-11 (runsc-newer: bookworm-backports' runsc),
// where bare bwrap cannot make its namespaces, so bare /bin/true is the baseline; and one execute under
// Debian 12's own runsc, which refuses every command.
// If podman is missing or image.sh fails, prints `skipped: <reason>` and exits 0.
// Reproduce: pnpm --filter @aleph/driver-linux bench
//   (BENCH_ROUNDS, BENCH_PER_ROUND, BENCH_CONTAINER_CONFIGS=tier1caps,sysadmin,default,runsc-newer,
//   BENCH_RUNSC=0)
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const SELF = fileURLToPath(import.meta.url);
const CI_DIR = fileURLToPath(new URL('../../../.ci/containers/', import.meta.url));
const TIER_NUMBER = { namespaces: 1, 'user-namespace': 2, direct: 3 };
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const firstLine = (s) =>
  String(s ?? '')
    .trim()
    .split('\n')[0];

if (process.argv[2] !== '--inside') await outside();
else
  await inside(process.argv[3], Number(process.argv[4]), Number(process.argv[5])).catch((error) => {
    console.log(JSON.stringify({ failed: `${error.code ?? error.name}: ${firstLine(error.message)}` }));
  });

/**
 * In one container (or on the host): measures the variants, interleaved, and prints the result as one JSON
 * line (the last line of stdout).
 */
async function inside(config, rounds, perRound) {
  const { ApprovalGate, runBoundedProcess, WorkspaceSandbox } = await import('@aleph/sandbox-core');
  const { createLinuxDriver } = await import('../dist/index.js');
  const scratch = mkdtempSync(path.join(os.tmpdir(), 'aleph-bench-container-'));
  const dirs = (name) => {
    const base = path.join(scratch, name);
    for (const d of ['ws', 'state', 'homes']) mkdirSync(path.join(base, d), { recursive: true });
    return {
      workspace: path.join(base, 'ws'),
      options: { stateDir: path.join(base, 'state'), homeRoot: path.join(base, 'homes') },
    };
  };
  const approvalGate = new ApprovalGate({
    requester: { requestApproval: async () => ({ outcome: 'approved' }) },
  });
  const drivers = [{ label: 'execute(/bin/true)', extra: {} }];
  if (config === 'default')
    drivers.push({ label: 'execute(/bin/true), bwrap absent', extra: { bwrapPath: '/nonexistent/bwrap' } });
  const out = { config, kernel: os.release(), uid: process.getuid(), rows: [] };
  const sandboxes = [];
  try {
    for (const d of drivers) {
      const { workspace, options } = dirs(d.label.replace(/\W+/g, '-'));
      const sandbox = new WorkspaceSandbox({
        driver: createLinuxDriver({ ...options, ...d.extra }),
        workspaceRoot: workspace,
        approvalGate,
      });
      sandboxes.push(sandbox);
      const row = { label: d.label };
      try {
        const r = await sandbox.execute({ sessionId: 'bench', program: '/bin/true' });
        if (r.exitCode !== 0)
          throw new Error(`exit ${r.exitCode}: ${firstLine(Buffer.from(r.stderr).toString())}`);
        row.tier = r.details?.tier;
        row.tierFallback = r.details?.tierFallback;
        row.check = r.details?.afterRun?.method;
        row.run = () => sandbox.execute({ sessionId: 'bench', program: '/bin/true' });
      } catch (error) {
        row.refused = `${error.code ?? error.name}: ${firstLine(error.message)}`;
      }
      out.rows.push(row);
    }
    const spawn = (file, args) => () =>
      runBoundedProcess({
        file,
        args,
        env: { PATH: '/usr/bin:/bin' },
        cwd: '/',
        timeoutMs: 30_000,
        maxOutputBytes: 1 << 16,
      });
    Object.assign(out, await bareBwrap(spawn));
    const floor = { label: 'bare /bin/true', run: spawn('/bin/true', []) };
    const measures = [
      ...out.rows.filter((r) => r.run !== undefined),
      ...(out.baseline ? [out.baseline] : []),
      floor,
    ];
    out.floor = floor;
    await interleave(measures, rounds, perRound);
    out.rounds = rounds;
    out.perRound = perRound;
  } finally {
    for (const s of sandboxes) await s.dispose().catch(() => {});
    rmSync(scratch, { recursive: true, force: true });
  }
  const strip = ({ run, ...rest }) => rest;
  console.log(
    JSON.stringify({
      ...out,
      rows: out.rows.map(strip),
      baseline: out.baseline && strip(out.baseline),
      floor: strip(out.floor),
    }),
  );
}

/**
 * Bare bwrap with `--proc /proc`, else without, else (newer gVisor, where bwrap cannot make its own user and
 * network namespaces) inside ones `unshare -Urn` made, as the launcher does there: the first that runs
 * `true` is the baseline (none: no baseline).
 */
async function bareBwrap(spawn) {
  const out = { bwrapTried: [] };
  const bwrap = spawnSync('sh', ['-c', 'command -v bwrap'], { encoding: 'utf8' }).stdout?.trim() || 'bwrap';
  const tail = ['--ro-bind', '/', '/', '--dev', '/dev', '--unshare-all', '/bin/true'];
  const inOuter = ['-Urn', bwrap, '--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc'];
  const tries = [
    { label: 'bare bwrap (--proc /proc)', file: bwrap, args: ['--proc', '/proc', ...tail] },
    { label: 'bare bwrap (no --proc)', file: bwrap, args: tail },
    {
      label: 'bare bwrap in unshare -Urn',
      file: 'unshare',
      args: [...inOuter, '--unshare-pid', '--unshare-ipc', '--unshare-uts', '/bin/true'],
    },
  ];
  for (const t of tries) {
    const r = await spawn(t.file, t.args)().catch((e) => ({
      exitCode: null,
      stderr: Buffer.from(e.message),
    }));
    const ok = r.exitCode === 0;
    out.bwrapTried.push({
      args: [t.file, ...t.args].join(' '),
      ok,
      error: ok ? undefined : firstLine(Buffer.from(r.stderr).toString()) || `exit ${r.exitCode}`,
    });
    if (ok) {
      out.baseline = { label: t.label, run: spawn(t.file, t.args) };
      break;
    }
  }
  return out;
}

/** Runs each measure (warm-up first), round by round; stores `samples` and `roundMedians` on each. */
async function interleave(measures, rounds, perRound) {
  for (const m of measures) {
    m.samples = [];
    m.roundMedians = [];
    for (let i = 0; i < 3; i++) await m.run();
  }
  for (let r = 0; r < rounds; r++)
    for (const m of measures) {
      const xs = [];
      for (let i = 0; i < perRound; i++) {
        const t = performance.now();
        const res = await m.run();
        xs.push(performance.now() - t);
        if (res.exitCode !== 0) throw new Error(`${m.label}: exit ${res.exitCode}`);
      }
      m.samples.push(...xs);
      m.roundMedians.push(median(xs));
    }
}

/** Host side: checks podman and the image, starts one container per config, prints the table. */
async function outside() {
  const rounds = Number(process.env.BENCH_ROUNDS ?? 15);
  const perRound = Number(process.env.BENCH_PER_ROUND ?? 2);
  const configs = (process.env.BENCH_CONTAINER_CONFIGS ?? 'tier1caps,sysadmin,default,runsc-newer')
    .split(',')
    .filter(Boolean);
  const skip = (reason) => {
    console.log(`@aleph/driver-linux execute inside containers: skipped: ${reason}`);
    process.exit(0);
  };
  if (process.platform !== 'linux') skip(`not Linux (${process.platform})`);
  let podman;
  try {
    podman = execFileSync('podman', ['--version'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    }).trim();
  } catch (error) {
    skip(`podman is not usable: ${firstLine(error.stderr) || error.message}`);
  }
  try {
    execFileSync('bash', [path.join(CI_DIR, 'image.sh')], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
  } catch (error) {
    skip(`.ci/containers/image.sh failed: ${firstLine(error.stderr) || error.message}`);
  }
  const t0 = performance.now();
  const results = [];
  const run = (label, argv) => {
    const t = performance.now();
    const r = spawnSync(argv[0], argv.slice(1), {
      encoding: 'utf8',
      maxBuffer: 1 << 24,
      env: { ...process.env, RUN_IN_TIMEOUT: '180' },
    });
    const wall = (performance.now() - t) / 1000;
    const last = r.stdout?.trim().split('\n').pop() ?? '';
    try {
      results.push({ ...JSON.parse(last), where: label, wall });
    } catch {
      results.push({
        where: label,
        wall,
        failed: `exit ${r.status}: ${firstLine(r.stderr) || firstLine(r.stdout) || r.error?.message}`,
      });
    }
  };
  const inner = (config) => [process.execPath, SELF, '--inside', config, String(rounds), String(perRound)];
  for (const config of configs) {
    if (config === 'runsc-newer') {
      // gVisor from 2023-11 (bookworm-backports), where tier 2 runs in its launcher's namespaces.
      const fetched = spawnSync('bash', [path.join(CI_DIR, 'runsc-newer.sh')], { encoding: 'utf8' });
      if (fetched.status !== 0) {
        results.push({ where: `podman ${config}`, wall: 0, failed: firstLine(fetched.stderr) });
        continue;
      }
    }
    run(`podman ${config}`, ['bash', path.join(CI_DIR, 'run-in.sh'), config, '--', ...inner(config)]);
  }
  run('host (no container)', inner('host'));
  let runsc;
  if (process.env.BENCH_RUNSC !== '0') {
    const t = performance.now();
    const r = spawnSync(
      'bash',
      [path.join(CI_DIR, 'run-in.sh'), 'runsc', '--', ...inner('runsc').slice(0, 4), '1', '1'],
      {
        encoding: 'utf8',
        env: { ...process.env, RUN_IN_TIMEOUT: '120' },
      },
    );
    runsc = { wall: (performance.now() - t) / 1000, status: r.status, stdout: r.stdout, stderr: r.stderr };
  }
  report({ podman, rounds, perRound, results, runsc, total: (performance.now() - t0) / 1000 });
}

/** Prints the medians and the ratios of each measured place. */
function report({ podman, rounds, perRound, results, runsc, total }) {
  console.log(
    `@aleph/driver-linux execute(/bin/true) inside podman containers, runc and runsc (${podman}; node ${process.version}, ${os.cpus().length} cores, kernel ${os.release()})`,
  );
  console.log(
    `  as root in each; median of ${rounds * perRound} interleaved runs (${rounds} rounds x ${perRound}); ms:`,
  );
  for (const r of results) {
    if (r.failed !== undefined) {
      console.log(`  ${r.where}: failed (${r.wall.toFixed(1)} s): ${r.failed}`);
      continue;
    }
    const base = r.baseline ?? r.floor;
    const baseMedian = median(base.samples);
    const floorMedian = median(r.floor.samples);
    const whyNoBwrap =
      r.baseline === undefined
        ? `; bare bwrap cannot run here (${r.bwrapTried.map((b) => b.error).join('; ')}), baseline bare /bin/true`
        : '';
    const procNote =
      r.bwrapTried.length > 1 && r.baseline !== undefined
        ? `  (${r.bwrapTried
            .filter((b) => !b.ok)
            .map((b) => b.error)
            .join('; ')})`
        : '';
    console.log(`  ${r.where} (${r.wall.toFixed(1)} s wall)${whyNoBwrap}:`);
    console.log(`    ${base.label.padEnd(48)} ${baseMedian.toFixed(2).padStart(7)}${procNote}`);
    if (r.baseline !== undefined)
      console.log(`    ${r.floor.label.padEnd(48)} ${floorMedian.toFixed(2).padStart(7)}`);
    for (const row of r.rows) {
      if (row.refused !== undefined) {
        console.log(`    ${row.label}: refused: ${row.refused}`);
        continue;
      }
      const v = median(row.samples);
      const rs = row.roundMedians.map((x, i) => x / base.roundMedians[i]);
      const tier = `tier ${TIER_NUMBER[row.tier] ?? '?'} (${row.tier})${row.tierFallback ? `, ${row.tierFallback}` : ''}; check after the run by ${row.check ?? '?'}`;
      console.log(
        `    ${row.label.padEnd(48)} ${v.toFixed(2).padStart(7)}  ${(v / baseMedian).toFixed(2)}x ${r.baseline === undefined ? 'bare /bin/true' : 'bare bwrap'} (rounds ${Math.min(...rs).toFixed(2)}–${Math.max(...rs).toFixed(2)})${r.baseline === undefined ? '' : `, ${(v / floorMedian).toFixed(1)}x bare /bin/true`}; ${tier}`,
      );
    }
  }
  if (runsc !== undefined) {
    const last = runsc.stdout?.trim().split('\n').pop() ?? '';
    let line;
    try {
      const r = JSON.parse(last);
      line = r.rows
        .map((row) => (row.refused ? `refused: ${shortRefusal(row.refused)}` : `ran, tier ${row.tier}`))
        .join('; ');
    } catch {
      line = `no result, exit ${runsc.status}: ${firstLine(runsc.stderr) || firstLine(runsc.stdout)}`;
    }
    console.log(
      `  podman runsc (gVisor, ${runsc.wall.toFixed(1)} s): one execute: ${line}; no tier, not measured`,
    );
  }
  console.log(`  total ${total.toFixed(0)} s; reproduce: pnpm --filter @aleph/driver-linux bench`);
}

/** A driver refusal in one line: its code, its first clause, and what failed in each tier (without the fixes). */
function shortRefusal(refusal) {
  const head = refusal.split('; tier 1:')[0];
  const tiers = [
    ...refusal.matchAll(
      /tier (\d): (?:the sandbox helper failed: |bubblewrap could not set up the sandbox: )?(.*?)(?:; fix:| \(fix:)/g,
    ),
  ];
  return [head, ...tiers.map((m) => `tier ${m[1]}: ${m[2]}`)].join('; ');
}
