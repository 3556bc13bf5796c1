// Proxy throughput and tunnel setup rate, each measured against direct loopback in the same run, and
// throughput beside a zero-copy relay in C (bench/splice-relay.c) as a reference for what any relay gets.
// The proxy (the aleph-proxy CLI) and the upstream run in their own processes. A last run pins the proxy
// to a core of its own, to tell the proxy's own cost from the competition for cores.
// Reproduce: pnpm --filter @aleph/proxy bench
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const MiB = 1024 * 1024;
const SIZE = Number(process.env.BENCH_MIB ?? 100) * MiB;
const cli = fileURLToPath(new URL('../dist/cli.js', import.meta.url));

/** Runs a command on the given CPUs (`taskset`), or as it is when `cpus` is undefined. */
const onCpus = (cpus, cmd, args) =>
  cpus === undefined ? [cmd, args] : ['taskset', ['-c', cpus, cmd, ...args]];

function upstreamProcess(cpus) {
  // On connect: read one byte (1 = bulk, 0 = small), then send SIZE bytes or one byte, then end.
  const code = `
    const net = require('net'); const chunk = Buffer.alloc(1 << 20, 120); const SIZE = ${SIZE};
    const s = net.createServer((c) => { c.on('error', () => {}); c.once('data', (d) => {
      if (d[0] === 0) { c.end('x'); return; }
      let left = SIZE; const pump = () => { while (left > 0) { const n = Math.min(left, chunk.length); left -= n;
        if (!c.write(n === chunk.length ? chunk : chunk.subarray(0, n))) { c.once('drain', pump); return; } } c.end(); }; pump(); }); });
    s.listen(0, '127.0.0.1', () => process.stdout.write(s.address().port + '\\n'));`;
  return start(...onCpus(cpus, process.execPath, ['-e', code]), (line) => Number(line));
}

function proxyProcess(upPort, cpus) {
  return start(...onCpus(cpus, process.execPath, [cli, '--allow', `127.0.0.1:${upPort}`]), (line) =>
    Number(JSON.parse(line).listen.split(':')[1]),
  );
}

function start(cmd, args, parse) {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (c) => {
      out += c;
      if (out.includes('\n')) resolve({ child, port: parse(out.split('\n')[0]) });
    });
    child.once('exit', (code) => reject(new Error(`${cmd} exited ${code}`)));
  });
}

/** Opens a connection to the upstream, directly or through the proxy, returning the ready socket. */
/** The reference relay (bench/splice-relay.c), compiled for this run; undefined without a C compiler. */
function compileRelay() {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'aleph-bench-relay-'));
  process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
  const bin = path.join(dir, 'splice-relay');
  const source = fileURLToPath(new URL('splice-relay.c', import.meta.url));
  const cc = spawnSync('cc', ['-O2', '-o', bin, source], { stdio: ['ignore', 'ignore', 'inherit'] });
  return cc.status === 0 ? bin : undefined;
}

let relayPort = 0;

async function open(mode, proxyPort, upPort, kind) {
  const port = mode === 'direct' ? upPort : mode === 'splice relay' ? relayPort : proxyPort;
  const s = net.connect(port, '127.0.0.1');
  s.setNoDelay(true);
  await new Promise((r, j) => s.once('connect', r).once('error', j));
  const read = (n) =>
    new Promise((resolve, reject) => {
      let buf = Buffer.alloc(0);
      const on = (c) => {
        buf = Buffer.concat([buf, c]);
        if (buf.length >= n) {
          s.removeListener('data', on);
          s.pause();
          if (buf.length > n) s.unshift(buf.subarray(n));
          resolve(buf.subarray(0, n));
        }
      };
      s.on('data', on).once('error', reject);
    });
  if (mode === 'connect' || mode === 'splice relay') {
    s.write(`CONNECT 127.0.0.1:${upPort} HTTP/1.1\r\n\r\n`);
    const head = await read(39); // "HTTP/1.1 200 Connection Established\r\n\r\n"
    if (!head.toString().startsWith('HTTP/1.1 200')) throw new Error(head.toString());
  } else if (mode === 'socks5') {
    s.write(Buffer.from([5, 1, 0, 5, 1, 0, 1, 127, 0, 0, 1, upPort >> 8, upPort & 255]));
    const r = await read(12);
    if (r[1] !== 0 || r[3] !== 0) throw new Error(`socks reply ${[...r]}`);
  }
  s.write(Buffer.from([kind]));
  s.resume();
  return s;
}

async function transfer(mode, proxyPort, upPort) {
  const t0 = performance.now();
  const s = await open(mode, proxyPort, upPort, 1);
  let got = 0;
  await new Promise((resolve) => {
    s.on('data', (c) => {
      got += c.length;
    });
    s.once('end', resolve);
  });
  s.destroy();
  if (got !== SIZE) throw new Error(`${mode}: got ${got} of ${SIZE}`);
  return SIZE / MiB / ((performance.now() - t0) / 1000);
}

function cpuMicros(pid) {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return ((Number(f[11]) + Number(f[12])) / 100) * 1e6; // utime + stime, clock ticks at 100 Hz
}

async function tunnels(mode, proxyPort, upPort, pid, total = 6000, concurrency = 16) {
  let next = 0;
  const cpu0 = pid ? cpuMicros(pid) : 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next++ < total) {
        const s = await open(mode, proxyPort, upPort, 0);
        await new Promise((r) => s.once('end', r).once('close', r).resume());
        s.destroy();
      }
    }),
  );
  const secs = (performance.now() - t0) / 1000;
  return { perSec: total / secs, cpuUs: pid ? (cpuMicros(pid) - cpu0) / total : 0 };
}

const up = await upstreamProcess();
const px = await proxyProcess(up.port);
const relayBin = process.platform === 'linux' ? compileRelay() : undefined;
const relay = relayBin && (await start(relayBin, [String(up.port)], (line) => Number(line)));
if (relay) relayPort = relay.port;
try {
  // Interleaved rounds, so a burst of load on the machine hits every mode alike.
  const ROUNDS = 5;
  await transfer('direct', px.port, up.port); // warm-up
  const runs = { direct: [], connect: [], socks5: [], ...(relay ? { 'splice relay': [] } : {}) };
  // CPU spent per 100 MiB: by the proxy relaying it, and by this process receiving it directly.
  let proxyCpu = 0;
  let clientCpu = 0;
  for (let i = 0; i < ROUNDS; i++) {
    for (const mode of Object.keys(runs)) {
      const px0 = cpuMicros(px.child.pid);
      const me0 = process.cpuUsage();
      runs[mode].push(await transfer(mode, px.port, up.port));
      if (mode === 'direct') {
        const me = process.cpuUsage(me0);
        clientCpu += me.user + me.system;
      } else if (mode !== 'splice relay') proxyCpu += cpuMicros(px.child.pid) - px0;
    }
  }
  const per100MiB = (us, transfers) => (us / 1000 / transfers) * ((100 * MiB) / SIZE);
  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const direct = median(runs.direct);
  const connect = median(runs.connect);
  const socks = median(runs.socks5);
  console.log(
    `@aleph/proxy (node ${process.version}, ${os.cpus().length} cores, ${os.cpus()[0]?.model}); ${SIZE / MiB} MiB transfers, median of ${ROUNDS} interleaved rounds`,
  );
  console.log(`  direct loopback      ${direct.toFixed(0).padStart(6)} MiB/s`);
  console.log(
    `  through CONNECT      ${connect.toFixed(0).padStart(6)} MiB/s  = ${((connect / direct) * 100).toFixed(0)}% of direct (target >= 70%)`,
  );
  console.log(
    `  through SOCKS5       ${socks.toFixed(0).padStart(6)} MiB/s  = ${((socks / direct) * 100).toFixed(0)}% of direct (target >= 70%)`,
  );
  if (relay) {
    const spliced = median(runs['splice relay']);
    console.log(
      `  through a C splice relay ${spliced.toFixed(0).padStart(6)} MiB/s  = ${((spliced / direct) * 100).toFixed(0)}% of direct (reference: zero-copy, no checks; bench/splice-relay.c)`,
    );
  } else console.log('  (C splice relay reference skipped: not Linux, or no C compiler (cc))');
  console.log(
    `  CPU per 100 MiB: the proxy relaying it ${per100MiB(proxyCpu, 2 * ROUNDS).toFixed(0)} ms; a client receiving it directly ${per100MiB(clientCpu, ROUNDS).toFixed(0)} ms (${os.cpus().length} cores for client, proxy and upstream)`,
  );
  await tunnels('direct', px.port, up.port, 0, 1000);
  const d = await tunnels('direct', px.port, up.port, 0);
  const c = await tunnels('connect', px.port, up.port, px.child.pid);
  const k = await tunnels('socks5', px.port, up.port, px.child.pid);
  console.log('  new connections per second at concurrency 16 (open, one byte, close):');
  console.log(`    direct             ${d.perSec.toFixed(0).padStart(6)} /s`);
  console.log(
    `    CONNECT tunnels    ${c.perSec.toFixed(0).padStart(6)} /s  (${((c.perSec / d.perSec) * 100).toFixed(0)}% of direct; proxy CPU ${c.cpuUs.toFixed(0)} µs per tunnel) target >= 3000/s`,
  );
  console.log(
    `    SOCKS5 tunnels     ${k.perSec.toFixed(0).padStart(6)} /s  (${((k.perSec / d.perSec) * 100).toFixed(0)}% of direct; proxy CPU ${k.cpuUs.toFixed(0)} µs per tunnel) target >= 3000/s`,
  );
} finally {
  px.child.kill('SIGTERM');
  up.child.kill('SIGTERM');
  relay?.child.kill('SIGTERM');
}

// The same transfers with the proxy on a core of its own while the client (this process) and the upstream
// share the other: whether the proxy, rather than the competition for cores, is what slows a transfer.
const pinnable =
  os.cpus().length >= 2 && spawnSync('taskset', ['-p', '-c', '0', String(process.pid)]).status === 0;
if (pinnable) {
  const up2 = await upstreamProcess('0');
  const px2 = await proxyProcess(up2.port, '1');
  try {
    await transfer('direct', px2.port, up2.port);
    const runs = { direct: [], connect: [], socks5: [] };
    for (let i = 0; i < 3; i++) {
      for (const mode of Object.keys(runs)) runs[mode].push(await transfer(mode, px2.port, up2.port));
    }
    const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
    const pct = (mode) => ((median(runs[mode]) / median(runs.direct)) * 100).toFixed(0);
    console.log(
      `  with the proxy on a core of its own (client and upstream share the other; direct ${median(runs.direct).toFixed(0)} MiB/s): CONNECT ${pct('connect')}%, SOCKS5 ${pct('socks5')}% of direct`,
    );
  } finally {
    px2.child.kill('SIGTERM');
    up2.child.kill('SIGTERM');
  }
} else console.log('  (pinned run skipped: taskset is not available or there is only one core)');
console.log('  reproduce: pnpm --filter @aleph/proxy bench');
