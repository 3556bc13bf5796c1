// Network costs inside the real sandbox (allowHosts), each against a baseline measured in the same run:
// 1. 100 MiB downloaded by curl through transparent egress (a plain `http://name:port/` to the address the
//    sandbox's resolver gave) vs through the proxy variables (`curl -p -x $HTTP_PROXY`, a CONNECT tunnel):
//    both end in the same managed proxy; the ratio is what the bridge's own CONNECT costs (none, ideally);
// 2. 1,000 short connections (connect, one HTTP request, close) from one Python process, each way (the name
//    and the proxy's address looked up once, before the clock starts);
// 3. DNS answer latency inside: 2,000 queries for an allowed name over UDP to the sandbox's resolver, vs a
//    UDP echo of the same size on the same loopback (the transport's floor), and getaddrinfo's own latency.
// Rounds interleave the two ways of each measure; medians are printed. Loopback only: the server is the
// host's 127.0.0.1, named through an injected resolver (no real DNS).
// Reproduce: pnpm --filter @aleph/driver-linux bench   (BENCH_ROUNDS, BENCH_MIB)

import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { createStaticResolver } from '@aleph/proxy';
import { ApprovalGate, WorkspaceSandbox } from '@aleph/sandbox-core';
import { createLinuxDriver } from '../dist/index.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const MiB = 1024 * 1024;
const SIZE = Number(process.env.BENCH_MIB ?? 100) * MiB;
const chunk = Buffer.alloc(MiB, 120);

const server = http.createServer((req, res) => {
  if (req.url === '/ok') {
    res.end('ok');
    return;
  }
  res.writeHead(200, { 'content-length': SIZE });
  let left = SIZE;
  const pump = () => {
    while (left > 0) {
      const n = Math.min(left, chunk.length);
      left -= n;
      if (!res.write(n === chunk.length ? chunk : chunk.subarray(0, n))) {
        res.once('drain', pump);
        return;
      }
    }
    res.end();
  };
  pump();
});
await new Promise((r) => server.listen(0, '127.0.0.1', r));
const port = server.address().port;

const root = mkdtempSync(path.join(os.tmpdir(), 'aleph-bench-net-'));
const driver = createLinuxDriver({
  proxy: { resolver: createStaticResolver({ 'api.bench': ['127.0.0.1'] }, false) },
});
const probe = await driver.probe();
if (!probe.available) {
  console.log(`driver unavailable: ${probe.problems.join('; ')}`);
  process.exit(1);
}
const sandbox = new WorkspaceSandbox({
  driver,
  workspaceRoot: root,
  approvalGate: new ApprovalGate({ requester: { requestApproval: async () => ({ outcome: 'approved' }) } }),
  defaultTimeoutMs: 120_000,
});
const capabilities = {
  network: { kind: 'allowHosts', hosts: [`api.bench:${port}`, `127.0.0.1:${port}`] },
  spawnSubprocess: true,
};
const run = async (program, args) => {
  const out = await sandbox.execute({ sessionId: 'bench-net', program, args, capabilities });
  if (out.exitCode !== 0) throw new Error(`${program} failed: ${out.stderrText}${out.stdoutText}`);
  return out.stdoutText.trim();
};
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

// 1. 100 MiB each way, curl timing only the transfer (not the sandbox's start).
const url = `http://api.bench:${port}/blob`;
const speed = async (transparent) => {
  const args = transparent
    ? ['-sS', '--noproxy', '*', '-o', '/dev/null', '-w', '%{speed_download}', url]
    : ['-sS', '-p', '-o', '/dev/null', '-w', '%{speed_download}', url];
  return Number(await run('curl', args)) / MiB;
};

// 2. 1,000 short connections from one process: transparent (connect to the name) or through the proxy
//    port (CONNECT, then the request). Seconds for all of them.
const SHORT = (transparent) => `
import os, socket, time, urllib.parse
N = 1000
# Resolved once each way, so both loops time connections only: the name through the sandbox's resolver,
# the proxy from HTTP_PROXY (the bridge's loopback port).
name = socket.getaddrinfo("api.bench", ${port}, socket.AF_INET, socket.SOCK_STREAM)[0][4]
proxy = urllib.parse.urlsplit(os.environ["HTTP_PROXY"])
proxy = (proxy.hostname, proxy.port)
def one():
    if ${transparent ? 'True' : 'False'}:
        s = socket.create_connection(name)
    else:
        s = socket.create_connection(proxy)
        s.sendall(b"CONNECT api.bench:${port} HTTP/1.1\\r\\n\\r\\n")
        head = b""
        while b"\\r\\n\\r\\n" not in head: head += s.recv(256)
    s.sendall(b"GET /ok HTTP/1.0\\r\\nHost: api.bench\\r\\n\\r\\n")
    while s.recv(4096): pass
    s.close()
t = time.perf_counter()
for _ in range(N): one()
print(time.perf_counter() - t)`;
const shortConnections = async (transparent) => Number(await run('python3', ['-c', SHORT(transparent)]));

// 3. DNS: queries for an allowed name vs a UDP echo on the same loopback; and getaddrinfo.
const DNS = `
import socket, struct, threading, time
N = 2000
q = struct.pack(">HHHHHH", 7, 0x0100, 1, 0, 0, 0) + b"\\x03api\\x05bench\\x00" + struct.pack(">HH", 1, 1)
def rtt(addr):
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.connect(addr)
    u.send(q); u.recv(512)
    t = time.perf_counter()
    for _ in range(N):
        u.send(q); u.recv(512)
    return (time.perf_counter() - t) / N * 1e6
e = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); e.bind(("127.0.0.1", 0))
def echo():
    while True:
        d, a = e.recvfrom(512); e.sendto(d, a)
threading.Thread(target=echo, daemon=True).start()
dns = rtt(("127.0.0.53", 53)); floor = rtt(e.getsockname())
t = time.perf_counter()
for _ in range(500): socket.getaddrinfo("api.bench", 80, socket.AF_INET, socket.SOCK_STREAM)
gai = (time.perf_counter() - t) / 500 * 1e6
print(dns, floor, gai)`;

const results = { transparent: [], proxied: [], shortT: [], shortP: [], dns: [], floor: [], gai: [] };
try {
  for (let i = 0; i < ROUNDS; i++) {
    results.proxied.push(await speed(false));
    results.transparent.push(await speed(true));
    results.shortP.push(await shortConnections(false));
    results.shortT.push(await shortConnections(true));
    const [dns, floor, gai] = (await run('python3', ['-c', DNS])).split(' ').map(Number);
    results.dns.push(dns);
    results.floor.push(floor);
    results.gai.push(gai);
  }
} finally {
  await sandbox.dispose();
  server.close();
  rmSync(root, { recursive: true, force: true });
}
const m = Object.fromEntries(Object.entries(results).map(([k, v]) => [k, median(v)]));
console.log(`network inside the sandbox (${probe.tierId}), medians of ${ROUNDS} rounds:`);
console.log(
  `  ${SIZE / MiB} MiB: through the proxy variables (CONNECT) ${m.proxied.toFixed(0)} MiB/s; transparent egress ${m.transparent.toFixed(0)} MiB/s = ${(m.transparent / m.proxied).toFixed(2)}x`,
);
console.log(
  `  1,000 short connections: through the proxy variables ${m.shortP.toFixed(2)} s (${(1000 / m.shortP).toFixed(0)}/s); transparent ${m.shortT.toFixed(2)} s (${(1000 / m.shortT).toFixed(0)}/s) = ${(m.shortP / m.shortT).toFixed(2)}x the rate`,
);
console.log(
  `  DNS: ${m.dns.toFixed(1)} µs per answer from the sandbox's resolver vs ${m.floor.toFixed(1)} µs for a UDP echo on the same loopback = ${(m.dns / m.floor).toFixed(2)}x; getaddrinfo ${m.gai.toFixed(1)} µs`,
);
