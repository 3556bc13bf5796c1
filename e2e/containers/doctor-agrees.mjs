// Runs inside a real container (started by .ci/containers/run-in.sh; doctor-agrees.test.ts): for each
// workspace on a filesystem of the container's (its tmpfs /tmp, its overlay root, a ramfs where this
// process may mount one, and the default session workspace), what `doctor --json --workspace DIR` says
// and what `run --json --workspace DIR` of the agent's step then did, printed as one JSON line.
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';

const cli = path.join(process.env.ALEPH_REPO ?? '', 'packages/sandbox/dist/cli-bundle/aleph-sandbox.cjs');
/** The CLI's JSON output (undefined when it printed none), its exit code and the start of its stderr. */
const aleph = (args, env = process.env) => {
  const r = spawnSync(process.execPath, [cli, ...args], {
    encoding: 'utf8',
    timeout: 120_000,
    input: '',
    env,
  });
  let json;
  try {
    json = JSON.parse(r.stdout);
  } catch {
    json = undefined;
  }
  return { code: r.status, json, stderr: r.stderr.slice(0, 2000) };
};

/** The filesystem type of the mount holding `dir` (the longest mount point that is a prefix of it). */
function fsType(dir) {
  let best = { at: '', type: 'unknown' };
  for (const line of readFileSync('/proc/self/mounts', 'utf8').split('\n')) {
    const [, at, type] = line.split(' ');
    if (at === undefined || type === undefined) continue;
    const inside = at === '/' || dir === at || dir.startsWith(`${at}/`);
    if (inside && at.length >= best.at.length) best = { at, type };
  }
  return best.type;
}

const made = [];
const workspaces = [];
const add = (name, parent) => {
  mkdirSync(parent, { recursive: true });
  const dir = mkdtempSync(path.join(parent, 'aleph-ws-'));
  made.push(dir);
  workspaces.push({ name, dir, fs: fsType(dir) });
};
add('tmpfs', '/tmp');
add('overlay', '/var/tmp');
// A filesystem that refuses idmapped mounts on every kernel: where this process may mount (root of a
// privileged container), a ramfs of its own.
let ramfs;
if (process.getuid() === 0) {
  ramfs = mkdtempSync('/mnt/aleph-ramfs-');
  if (spawnSync('mount', ['-t', 'ramfs', '-o', 'mode=0755', 'aleph-ramfs', ramfs]).status === 0) {
    add('ramfs', ramfs);
  } else {
    rmSync(ramfs, { recursive: true, force: true });
    ramfs = undefined;
  }
}

const step = ['--json', '--allow-spawn', '--approve', 'all'];
/** Doctor's verdict, tier and gaps, and the run's, for one workspace (`dir` undefined: the defaults). */
function both(dir, env = process.env) {
  const ws = dir === undefined ? [] : ['--workspace', dir];
  const doctor = aleph(['doctor', '--json', ...ws], env);
  const run = aleph(['run', ...step, ...ws, '--', 'sh', '-c', 'echo hi'], env);
  return {
    doctor: {
      code: doctor.code,
      available: doctor.json?.available ?? null,
      tierId: doctor.json?.tierId ?? null,
      notEnforced: doctor.json?.notEnforced ?? null,
      problems: doctor.json?.problems ?? [],
      workspaceTier: doctor.json?.mechanisms?.['workspace-tier']?.detail ?? null,
      tier1: doctor.json?.mechanisms?.['tier-1'] ?? null,
      stderr: doctor.stderr,
    },
    run: {
      code: run.code,
      stdout: run.json?.stdout ?? null,
      tier: run.json?.details?.tier ?? null,
      tierFallback: run.json?.details?.tierFallback ?? null,
      notEnforced: run.json?.details?.notEnforced ?? null,
      error: run.json?.error?.code ?? null,
      stderr: run.stderr,
    },
  };
}

const results = workspaces.map((w) => ({ ...w, ...both(w.dir) }));
results.push({
  name: 'default',
  dir: null,
  fs: fsType(path.join(process.env.HOME ?? '/', '.aleph')),
  ...both(),
});
// The temporary directory on a filesystem that refuses idmapped mounts (as a tmpfs /tmp does before Linux
// 6.3), with a HOME of its own (and so a host cache of its own): the tmpfs workspace again.
if (ramfs !== undefined) {
  const home = mkdtempSync('/tmp/aleph-home-');
  const tmp = mkdtempSync(path.join(ramfs, 'aleph-tmp-'));
  made.push(home, tmp);
  const env = { ...process.env, HOME: home, TMPDIR: tmp };
  const dir = workspaces.find((w) => w.name === 'tmpfs')?.dir;
  results.push({ name: 'tmpfs, TMPDIR on ramfs', dir, fs: fsType(dir), ...both(dir, env) });
  // minimum_tier = 1 allows no fallback: a run in the ramfs workspace is refused, and doctor says so.
  const strict = mkdtempSync('/tmp/aleph-home-');
  made.push(strict);
  mkdirSync(path.join(strict, '.aleph'));
  writeFileSync(path.join(strict, '.aleph', 'config.toml'), '[sandbox.linux]\nminimum_tier = 1\n');
  const ws = workspaces.find((w) => w.name === 'ramfs')?.dir;
  results.push({
    name: 'ramfs, minimum_tier = 1',
    dir: ws,
    fs: fsType(ws),
    ...both(ws, { ...process.env, HOME: strict }),
  });
}
for (const dir of made) rmSync(dir, { recursive: true, force: true });
if (ramfs !== undefined) {
  spawnSync('umount', [ramfs]);
  rmSync(ramfs, { recursive: true, force: true });
}
console.log(JSON.stringify({ uid: process.getuid(), results }));
