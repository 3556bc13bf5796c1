// Linux driver costs, each against a baseline measured in the same run:
// 1. execute(/bin/true), network none, vs a plain execa spawn of /bin/true and vs bare bwrap spawned the
//    same way (target: <= 1.5x bare bwrap);
// 2. the same with allowHosts (proxy + bridge) (target: <= 2 ms more than none);
// 3. 100 MiB through the in-sandbox bridge vs direct loopback (target: >= 50%).
// Reproduce: pnpm --filter @aleph/driver-linux bench
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { ApprovalGate, runBoundedProcess, WorkspaceSandbox } from '@aleph/sandbox-core';
import { execa } from 'execa';
import { createLinuxDriver } from '../dist/index.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 6);
const PER_ROUND = Number(process.env.BENCH_PER_ROUND ?? 30);
const root = mkdtempSync(path.join(os.tmpdir(), 'aleph-bench-'));
const driver = createLinuxDriver();
const probe = await driver.probe();
if (!probe.available) {
  console.log(`driver unavailable: ${probe.problems.join('; ')}`);
  process.exit(1);
}
const sandbox = new WorkspaceSandbox({
  driver,
  workspaceRoot: root,
  approvalGate: new ApprovalGate({ requester: { requestApproval: async () => ({ outcome: 'approved' }) } }),
});

const variants = {
  'execa /bin/true': () => execa('/bin/true', [], { reject: false, stdin: 'ignore' }),
  'execa bare bwrap': () =>
    execa(
      'bwrap',
      [
        '--ro-bind',
        '/',
        '/',
        '--dev',
        '/dev',
        '--proc',
        '/proc',
        '--unshare-all',
        '--die-with-parent',
        '/bin/true',
      ],
      {
        reject: false,
        stdin: 'ignore',
      },
    ),
  'execute(/bin/true) none': () => sandbox.execute({ sessionId: 'bench', program: '/bin/true' }),
  'execute(/bin/true) allowHosts': () =>
    sandbox.execute({
      sessionId: 'bench',
      program: '/bin/true',
      capabilities: { network: { kind: 'allowHosts', hosts: ['pypi.org'] } },
    }),
};
const samples = Object.fromEntries(Object.keys(variants).map((k) => [k, []]));
for (const fn of Object.values(variants)) for (let i = 0; i < 5; i++) await fn(); // warm-up
for (let round = 0; round < ROUNDS; round++) {
  for (const [name, fn] of Object.entries(variants)) {
    for (let i = 0; i < PER_ROUND; i++) {
      const t = performance.now();
      await fn();
      samples[name].push(performance.now() - t);
    }
  }
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const m = Object.fromEntries(Object.entries(samples).map(([k, v]) => [k, median(v)]));
console.log(
  `@aleph/driver-linux (node ${process.version}, ${os.cpus().length} cores, kernel ${os.release()}; ${probe.tier})`,
);
console.log(`  per-command latency, median of ${ROUNDS * PER_ROUND} interleaved runs:`);
for (const [k, v] of Object.entries(m)) console.log(`    ${k.padEnd(32)} ${v.toFixed(2).padStart(7)} ms`);
const none = m['execute(/bin/true) none'];
const bare = m['execa bare bwrap'];
console.log(`  overhead over a plain execa spawn: ${(none - m['execa /bin/true']).toFixed(2)} ms`);
console.log(
  `  execute / bare bwrap: ${(none / bare).toFixed(2)}x (target <= 1.5x) ${none / bare <= 1.5 ? 'met' : 'NOT met'}`,
);
const extra = m['execute(/bin/true) allowHosts'] - none;
console.log(
  `  allowHosts over none: +${extra.toFixed(2)} ms (target <= 2 ms) ${extra <= 2 ? 'met' : 'NOT met'}`,
);

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
const profile = driver.profileFor(caps, ws, { sessionId: 'bench', workspace: ws });
const socketPath = profile.network.proxySocket;
mkdirSync(path.dirname(socketPath), { recursive: true });
const unixSource = net.createServer(source);
await new Promise((r) => unixSource.listen(socketPath, r));
const { chmodSync } = await import('node:fs');
chmodSync(socketPath, 0o666);
const tcpSource = net.createServer(source);
await new Promise((r) => tcpSource.listen(0, '127.0.0.1', r));
const directPort = tcpSource.address().port;

const seccomp = Buffer.from(profile.seccomp.program, 'base64');
const throughBridge = async () => {
  const r = await runBoundedProcess({
    file: probe.bwrapPath,
    args: [...profile.bwrapArgs, 'python3', '-c', client(3128)],
    env: { PATH: '/usr/local/bin:/usr/bin:/bin' },
    cwd: '/',
    timeoutMs: 60_000,
    maxOutputBytes: 1 << 16,
    extraFds: [seccomp],
  });
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
rmSync(root, { recursive: true, force: true });
