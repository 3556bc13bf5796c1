// Linux driver costs, each against a baseline measured in the same run:
// 1. execute(/bin/true) through WorkspaceSandbox + the Linux driver (launcher → bwrap → helper; on a root host
//    idmapped mounts of the workspace, protected-path stubs and a per-session HOME), network none, vs bare
//    `bwrap --unshare-all --ro-bind / / --dev /dev --proc /proc /bin/true` spawned the same way (the same
//    runner, runBoundedProcess) (target: <= 1.5x bare bwrap), in an empty workspace and in a git repository;
// 2. the peer, @anthropic-ai/sandbox-runtime in library mode (initialize once, wrapWithSandbox + a spawn per
//    command), in the same process (target: execute >= 5x faster than the peer); see bench/peer.mjs;
// 3. the same with allowHosts (proxy + bridge) (target: <= 2 ms more than none);
// 4. 100 MiB through the in-sandbox bridge vs direct loopback (target: >= 50%).
// Reproduce: pnpm --filter @aleph/driver-linux bench   (BENCH_ROUNDS, BENCH_PER_ROUND, BENCH_MIB, BENCH_PEER=0)
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ApprovalGate, runBoundedProcess, WorkspaceSandbox } from '@aleph/sandbox-core';
import { execa } from 'execa';
import { createLinuxDriver, resolveHelperPath } from '../dist/index.js';
import { createForkServer } from '../dist/run/fork-server.js';
import { interleave, median } from './interleave.mjs';
import { checkPeer, ensurePeer, PEER_DIR, PEER_PACKAGE, PEER_VERSION, startPeer } from './peer.mjs';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 6);
const PER_ROUND = Number(process.env.BENCH_PER_ROUND ?? 30);
const root = mkdtempSync(path.join(os.tmpdir(), 'aleph-bench-'));
const driver = createLinuxDriver();
const probe = await driver.probe();
if (!probe.available) {
  console.log(`driver unavailable: ${probe.problems.join('; ')}`);
  process.exit(1);
}
const approvalGate = new ApprovalGate({
  requester: { requestApproval: async () => ({ outcome: 'approved' }) },
});
const sandbox = new WorkspaceSandbox({ driver, workspaceRoot: root, approvalGate });
// The same driver without its fork server: every launcher forked from this Node process.
const nodeSpawnSandbox = new WorkspaceSandbox({
  driver: createLinuxDriver({ forkServer: false }),
  workspaceRoot: root,
  approvalGate,
});
const benchState = mkdtempSync(path.join(os.tmpdir(), 'aleph-bench-state-'));
const forkServer = createForkServer(resolveHelperPath(), benchState);

// A realistic workspace: a git repository (a .git dir with hooks, config, objects) with a few files and a
// commit, so that the protected paths under .git and the top-level stubs are all in play.
const repo = mkdtempSync(path.join(os.tmpdir(), 'aleph-bench-repo-'));
const git = (...args) =>
  execFileSync('git', ['-c', 'user.name=bench', '-c', 'user.email=bench@example.invalid', ...args], {
    cwd: repo,
    stdio: 'ignore',
  });
git('init', '-q', '-b', 'main');
mkdirSync(path.join(repo, 'src'));
for (let i = 0; i < 20; i++)
  writeFileSync(path.join(repo, 'src', `m${i}.ts`), `export const x${i} = ${i};\n`);
writeFileSync(path.join(repo, 'package.json'), '{ "name": "bench-repo", "version": "1.0.0" }\n');
writeFileSync(path.join(repo, '.gitignore'), 'node_modules/\n');
git('add', '-A');
git('commit', '-q', '-m', 'initial');
// workspaceFor: the session's workspace is the repository itself, not a directory of its own beneath it.
const repoSandbox = new WorkspaceSandbox({
  driver,
  workspaceRoot: repo,
  workspaceFor: () => repo,
  approvalGate,
});

// The peer, in this process; as an unprivileged uid in a child process if it cannot run as root.
const peerNotes = [];
let peer;
let peerChild;
if (process.env.BENCH_PEER !== '0') {
  try {
    peerNotes.push(...ensurePeer());
    if (process.env.BENCH_PEER_AS !== undefined)
      throw new Error(`BENCH_PEER_AS=${process.env.BENCH_PEER_AS}`);
    peer = await startPeer();
    await checkPeer(peer);
    peerNotes.push(`ran in this process as uid ${process.getuid()}`);
  } catch (error) {
    await peer?.dispose().catch(() => {});
    peer = undefined;
    peerNotes.push(`could not run in this process as uid ${process.getuid()}: ${error.message}`);
    if (process.getuid() === 0) {
      const uid = process.env.BENCH_PEER_AS ?? '65534';
      const home = mkdtempSync(path.join(os.tmpdir(), 'aleph-bench-peer-home-'));
      chmodSync(home, 0o777);
      try {
        const out = execFileSync(
          'setpriv',
          [
            `--reuid=${uid}`,
            `--regid=${uid}`,
            '--clear-groups',
            process.execPath,
            fileURLToPath(new URL('./peer.mjs', import.meta.url)),
            '--child',
            String(ROUNDS * PER_ROUND),
          ],
          { env: { ...process.env, HOME: home, TMPDIR: home }, encoding: 'utf8', timeout: 600_000 },
        );
        peerChild = JSON.parse(out.trim().split('\n').pop());
        peerNotes.push(
          peerChild.ok
            ? `ran as uid ${uid} through setpriv, in a child process (not interleaved with the rest)`
            : `as uid ${uid} through setpriv it failed too: ${peerChild.error}`,
        );
      } catch (e) {
        peerNotes.push(`as uid ${uid} through setpriv it failed too: ${e.message.split('\n')[0]}`);
      } finally {
        rmSync(home, { recursive: true, force: true });
      }
    }
  }
}

const bareBwrapArgs = [
  '--unshare-all',
  '--ro-bind',
  '/',
  '/',
  '--dev',
  '/dev',
  '--proc',
  '/proc',
  '/bin/true',
];
// Bare bwrap, started by this Node process (child_process) or, for the record, by the fork server.
const bareBwrap = (starter) =>
  runBoundedProcess({
    file: probe.bwrapPath,
    args: bareBwrapArgs,
    env: { PATH: '/usr/bin:/bin' },
    cwd: '/',
    timeoutMs: 30_000,
    maxOutputBytes: 1 << 16,
    ...(starter === undefined ? {} : { starter }),
  });
const variants = {
  'execa /bin/true': () => execa('/bin/true', [], { reject: false, stdin: 'ignore' }),
  'bare bwrap': () => bareBwrap(),
  'bare bwrap (through the fork server)': () => bareBwrap(forkServer.start),
  'execute(/bin/true) none': () => sandbox.execute({ sessionId: 'bench', program: '/bin/true' }),
  'execute(/bin/true) none, no fork server': () =>
    nodeSpawnSandbox.execute({ sessionId: 'bench', program: '/bin/true' }),
  'execute(/bin/true) git repo': () => repoSandbox.execute({ sessionId: 'bench-repo', program: '/bin/true' }),
  'execute(/bin/true) allowHosts': () =>
    sandbox.execute({
      sessionId: 'bench',
      program: '/bin/true',
      capabilities: { network: { kind: 'allowHosts', hosts: ['pypi.org'] } },
    }),
  ...(peer === undefined ? {} : { [`peer ${PEER_PACKAGE}`]: () => peer.run() }),
};
const check = await sandbox.execute({ sessionId: 'bench', program: '/bin/true' });
const checkRepo = await repoSandbox.execute({ sessionId: 'bench-repo', program: '/bin/true' });
if (check.exitCode !== 0 || checkRepo.exitCode !== 0) {
  throw new Error(`execute(/bin/true) failed: ${Buffer.from(check.stderr).toString()}`);
}
const { samples, rounds: roundSamples } = await interleave(variants, { rounds: ROUNDS, perRound: PER_ROUND });
const m = Object.fromEntries(Object.entries(samples).map(([k, v]) => [k, median(v)]));
if (peerChild?.ok) m[`peer ${PEER_PACKAGE} (setpriv child)`] = median(peerChild.samples);
// A ratio's spread within the run: the min and max over the rounds of the ratio of the rounds' medians.
const spread = (a, b) => {
  if (roundSamples[a] === undefined || roundSamples[b] === undefined) return '';
  const rs = roundSamples[a].map((xs, i) => median(xs) / median(roundSamples[b][i]));
  return ` (rounds ${Math.min(...rs).toFixed(2)}–${Math.max(...rs).toFixed(2)})`;
};
console.log(
  `@aleph/driver-linux (node ${process.version}, ${os.cpus().length} cores, kernel ${os.release()}; tier ${probe.tier}; uid ${process.getuid()})`,
);
console.log(`  per-command latency, median of ${ROUNDS * PER_ROUND} interleaved runs:`);
for (const [k, v] of Object.entries(m)) console.log(`    ${k.padEnd(48)} ${v.toFixed(2).padStart(7)} ms`);
const none = m['execute(/bin/true) none'];
const inRepo = m['execute(/bin/true) git repo'];
const bare = m['bare bwrap'];
console.log(`  overhead over a plain execa spawn: ${(none - m['execa /bin/true']).toFixed(2)} ms`);
for (const [label, key, v] of [
  ['execute (empty workspace)', 'execute(/bin/true) none', none],
  ['execute (git repository) ', 'execute(/bin/true) git repo', inRepo],
]) {
  console.log(
    `  ${label} / bare bwrap: ${(v / bare).toFixed(2)}x${spread(key, 'bare bwrap')} (target <= 1.5x) ${v / bare <= 1.5 ? 'met' : 'NOT met'}`,
  );
}
console.log(`  git repository over empty workspace: +${(inRepo - none).toFixed(2)} ms`);
// The baseline is bwrap started the way a Node program starts it (child_process, through the same
// runner); execute() reaches its launcher through the driver's fork server. For the record, the same
// ratios against bwrap started through that fork server, and execute() without it:
const bareFs = m['bare bwrap (through the fork server)'];
console.log(
  `  execute (empty workspace) / bare bwrap through the fork server: ${(none / bareFs).toFixed(2)}x${spread('execute(/bin/true) none', 'bare bwrap (through the fork server)')}`,
);
console.log(
  `  execute without the fork server / bare bwrap: ${(m['execute(/bin/true) none, no fork server'] / bare).toFixed(2)}x; the fork server saves ${(m['execute(/bin/true) none, no fork server'] - none).toFixed(2)} ms (this process's RSS ${(process.memoryUsage().rss / 2 ** 20).toFixed(0)} MiB)`,
);
console.log(`  peer ${PEER_PACKAGE}@${PEER_VERSION} (library mode; ${PEER_DIR}): ${peerNotes.join('; ')}`);
const peerKey = peer === undefined ? undefined : `peer ${PEER_PACKAGE}`;
const peerMedian =
  peerKey === undefined ? (peerChild?.ok ? median(peerChild.samples) : undefined) : m[peerKey];
if (peerMedian !== undefined) {
  for (const [label, key, v] of [
    ['empty workspace', 'execute(/bin/true) none', none],
    ['git repository ', 'execute(/bin/true) git repo', inRepo],
  ]) {
    const x = peerMedian / v;
    console.log(
      `  execute (${label}) is ${x.toFixed(2)}x faster than the peer${peerKey === undefined ? '' : spread(peerKey, key)} (target >= 5x) ${x >= 5 ? 'met' : 'NOT met'}`,
    );
  }
} else {
  console.log('  peer: not measured');
}
const extra = m['execute(/bin/true) allowHosts'] - none;
console.log(
  `  allowHosts over none: +${extra.toFixed(2)} ms (target <= 2 ms) ${extra <= 2 ? 'met' : 'NOT met'}`,
);
await peer?.dispose();

// Bridge throughput: a raw source on the proxy's socket path stands in for the proxy, so only the bridge is
// measured; the same Python client reads 100 MiB through it, and directly from a loopback TCP source.
const MiB = 1024 * 1024;
const SIZE = Number(process.env.BENCH_MIB ?? 100) * MiB;
const chunk = Buffer.alloc(MiB, 120);
const source = (socket) => {
  socket.on('error', () => {});
  let left = SIZE;
  const pump = () => {
    while (left > 0) {
      const n = Math.min(left, chunk.length);
      left -= n;
      if (!socket.write(n === chunk.length ? chunk : chunk.subarray(0, n))) {
        socket.once('drain', pump);
        return;
      }
    }
    socket.end();
  };
  pump();
};
const client = (port) =>
  `import socket, time\ns = socket.create_connection(('127.0.0.1', ${port}))\nbuf = bytearray(1 << 20); mv = memoryview(buf); n = 0; t = time.time()\nwhile True:\n    r = s.recv_into(mv)\n    if r == 0: break\n    n += r\nprint(n, time.time() - t)`;
const parse = (stdout) => {
  const [n, secs] = stdout.trim().split(' ').map(Number);
  if (n !== SIZE) throw new Error(`read ${n} of ${SIZE}: ${stdout}`);
  return SIZE / MiB / secs;
};

const ws = (await sandbox.forSession('bench')).cwd;
const caps = {
  fsRead: [],
  fsWrite: [],
  network: { kind: 'allowHosts', hosts: ['bridge.bench'] },
  spawnSubprocess: false,
};
const profile = await driver.profileFor(caps, ws, { sessionId: 'bench', workspace: ws });
const socketPath = profile.network.proxySocket;
mkdirSync(path.dirname(socketPath), { recursive: true });
const unixSource = net.createServer(source);
await new Promise((r) => unixSource.listen(socketPath, r));
chmodSync(socketPath, 0o666);
const tcpSource = net.createServer(source);
await new Promise((r) => tcpSource.listen(0, '127.0.0.1', r));
const directPort = tcpSource.address().port;

const seccomp = Buffer.from(profile.seccomp.program, 'base64');
// As the driver runs it: the host-side launcher (idmapped mounts, substitutions) → bwrap → helper; the
// command's environment goes to the helper on a pipe as NUL-terminated NAME=value entries.
const childEnv = Buffer.from('PATH=/usr/local/bin:/usr/bin:/bin\0HOME=/tmp\0');
const throughBridge = async () => {
  const r = await runBoundedProcess({
    file: resolveHelperPath(),
    args: [
      '--launch',
      ...profile.launch,
      '--',
      probe.bwrapPath,
      ...profile.bwrapArgs,
      'python3',
      '-c',
      client(3128),
    ],
    env: { PATH: '/usr/local/bin:/usr/bin:/bin' },
    cwd: '/',
    timeoutMs: 60_000,
    maxOutputBytes: 1 << 16,
    // 3: the seccomp program, 4: the environment, 5: the sandbox's resolv.conf (allowHosts plans mount it).
    extraFds: [seccomp, childEnv, Buffer.from('nameserver 127.0.0.53\n')],
  });
  if (r.exitCode !== 0) throw new Error(`bridge client failed: ${Buffer.from(r.stderr).toString()}`);
  return parse(Buffer.from(r.stdout).toString());
};
const direct = async () => {
  const r = await runBoundedProcess({
    file: 'python3',
    args: ['-c', client(directPort)],
    env: { PATH: '/usr/local/bin:/usr/bin:/bin' },
    timeoutMs: 60_000,
    maxOutputBytes: 1 << 16,
  });
  return parse(Buffer.from(r.stdout).toString());
};
const bridgeRuns = [];
const directRuns = [];
for (let i = 0; i < 3; i++) {
  directRuns.push(await direct());
  bridgeRuns.push(await throughBridge());
}
const d = median(directRuns);
const b = median(bridgeRuns);
console.log(
  `  ${SIZE / MiB} MiB over TCP, median of 3: direct loopback ${d.toFixed(0)} MiB/s; through the bridge ${b.toFixed(0)} MiB/s = ${((b / d) * 100).toFixed(0)}% (target >= 50%) ${b / d >= 0.5 ? 'met' : 'NOT met'}`,
);
console.log('  reproduce: pnpm --filter @aleph/driver-linux bench');

unixSource.close();
tcpSource.close();
await sandbox.dispose();
await nodeSpawnSandbox.dispose();
await forkServer.dispose();
await repoSandbox.dispose();
rmSync(benchState, { recursive: true, force: true });
rmSync(root, { recursive: true, force: true });
rmSync(repo, { recursive: true, force: true });
