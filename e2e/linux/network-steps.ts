/**
 * The commands of the network e2e tests (network-egress.test.ts), as harness steps: real clients against
 * the local servers of network-servers.ts, the denied cases, and probes of the new paths.
 */

const spawnOk = { spawnSubprocess: true };
const sh = (script: string, hosts: readonly string[] | 'all' | 'none') => ({
  program: 'sh',
  args: ['-c', script],
  capabilities: {
    ...spawnOk,
    network:
      hosts === 'all'
        ? { kind: 'allowAll' }
        : hosts === 'none'
          ? { kind: 'none' }
          : { kind: 'allowHosts', hosts },
  },
});
const py = (code: string, hosts: readonly string[] | 'none') =>
  sh(`exec python3 -c '${code.replaceAll("'", `'"'"'`)}'`, hosts);

/** A DNS query for NAME (type A), with an OPT record when EDNS is wanted, in Python. */
const DNS_QUERY = `
import socket, struct
def query(name, qid=0x1111, edns=False):
    q = struct.pack(">HHHHHH", qid, 0x0100, 1, 0, 0, 1 if edns else 0)
    q += b"".join(bytes([len(l)]) + l.encode() for l in name.split(".")) + b"\\x00" + struct.pack(">HH", 1, 1)
    if edns: q += b"\\x00" + struct.pack(">HHIH", 41, 4096, 0, 0)
    return q
def ask(q):
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.settimeout(5)
    u.sendto(q, ("127.0.0.53", 53))
    while True:
        d, _ = u.recvfrom(4096)
        if d[:2] == q[:2]: return d
`;

const DNS_GARBAGE = `${DNS_QUERY}
import os
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
head = b"\\x12\\x34\\x01\\x00\\x00\\x01\\x00\\x00\\x00\\x00\\x00\\x00"
bad = [b"", b"\\x00", os.urandom(11), head + b"\\xc0\\x0c\\x00\\x01\\x00\\x01", head + b"\\x3f" + b"a" * 10,
       head + (b"\\x3f" + b"a" * 63) * 5 + b"\\x00\\x00\\x01\\x00\\x01", b"\\x12\\x34\\x81\\x80" + b"\\x00" * 8,
       b"\\x12\\x34\\x01\\x00\\xff\\xff\\x00\\x00\\x00\\x00\\xff\\xff\\x03api\\x04test\\x00\\x00\\x01\\x00\\x01",
       head[:5] + b"\\x01" + head[6:] + b"\\x03api\\x04test\\x00\\x00\\x01\\x00\\x01" + b"\\x00\\x00\\x29" + b"\\xff" * 8]
bad += [os.urandom(n) for n in (12, 50, 512, 4000)]
for b in bad: u.sendto(b, ("127.0.0.53", 53))
for junk in (b"\\xff\\xff" + b"x" * 100, b"\\x00\\x05abc", b"\\x00\\x00"):
    t = socket.create_connection(("127.0.0.53", 53)); t.sendall(junk); t.close()
d = ask(query("api.test", 0xabcd))
print("udp", d[3] & 15, ".".join(str(x) for x in d[-4:-2]))
q = query("api.test", 0xabce)
t = socket.create_connection(("127.0.0.53", 53)); t.sendall(struct.pack(">H", len(q)) + q)
n = struct.unpack(">H", t.recv(2))[0]; d = t.recv(n)
print("tcp", d[3] & 15)
`;

const WEBSOCKET = (port: number) => `
import socket
s = socket.create_connection(("api.test", ${port}))
s.sendall(b"GET /ws HTTP/1.1\\r\\nHost: api.test\\r\\nUpgrade: websocket\\r\\nConnection: Upgrade\\r\\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\\r\\nSec-WebSocket-Version: 13\\r\\n\\r\\n")
head = b""
while b"\\r\\n\\r\\n" not in head: head += s.recv(1024)
print(head.split(b"\\r\\n")[0].decode())
frame = bytes([0x81, 0x85, 1, 2, 3, 4]) + bytes(b ^ k for b, k in zip(b"hello", b"\\x01\\x02\\x03\\x04\\x01"))
s.sendall(frame)
got = b""
while len(got) < len(frame): got += s.recv(100)
print("echo", got == frame)
`;

const FORGED_REPORT = `
import socket
for name in ("api.test", "forged.test"):
    s = socket.create_connection(("127.0.0.1", 3128)); s.sendall(("ALEPH dns-refused " + name + "\\r\\n").encode())
    s.recv(100); s.close()
`;

const probe = (label: string, url: string) =>
  `out=$(curl -sf --noproxy '*' -m 3 ${url}) && echo "${label}: $out" || echo '${label}: refused'`;

const UNSET_PROXY = 'env -u http_proxy -u HTTP_PROXY -u https_proxy -u HTTPS_PROXY -u all_proxy -u ALL_PROXY';

/** Every step, the transparent ones only where the tier has a network namespace. */
export function egressSteps(
  ports: { http: number; echo: number; registry: number; tls: number },
  transparent: boolean,
): { id: string; session?: string; via?: 'spawn'; command: unknown }[] {
  const h = ports.http;
  const hosts = [
    `api.test:${h}`,
    `tls.test:${ports.tls}`,
    `raw.test:${ports.echo}`,
    'lan.test',
    `127.0.0.1:${h}`,
    `127.0.0.1:${ports.echo}`,
    `127.0.0.1:${ports.tls}`,
  ];
  const registry = `http://registry.test:${ports.registry}/`;
  const npm = `npm install aleph-tiny --registry ${registry} --no-audit --no-fund --no-update-notifier --cache "$HOME/.npm-e2e" --fetch-timeout 20000`;
  const always = [
    { id: 'curl-proxy', command: sh(`curl -sS http://api.test:${h}/ok`, hosts) },
    {
      id: 'host-denied',
      command: sh(`curl -sS -o /dev/null -w '%{http_code}' http://evil.test:${h}/`, hosts),
    },
    {
      // The same through the session API: spawn(), its output streamed, then wait().
      id: 'host-denied-spawn',
      via: 'spawn' as const,
      command: sh(`curl -sS -o /dev/null -w '%{http_code}' http://evil.test:${h}/`, hosts),
    },
    {
      id: 'private-denied',
      command: sh(`curl -sS -i http://lan.test:${h}/ | head -n1 | tr -d '\\r'`, hosts),
    },
    { id: 'npm-private', session: 'npm-1', command: sh(npm, [`registry.test:${ports.registry}`]) },
    {
      id: 'npm-allowed',
      session: 'npm-2',
      command: sh(`${npm} >/dev/null && node -e "console.log(require('aleph-tiny'))"`, [
        `registry.test:${ports.registry}`,
        `127.0.0.1:${ports.registry}`,
      ]),
    },
    { id: 'control-host-loopback', command: sh(probe('host loopback', `http://127.0.0.1:${h}/ok`), 'all') },
  ];
  if (!transparent) return always;
  return [
    ...always,
    {
      id: 'node-fetch',
      command: sh(
        `node -e "fetch('http://api.test:${h}/ok').then(async (r) => console.log(r.status, await r.text()))"`,
        hosts,
      ),
    },
    { id: 'curl-noproxy', command: sh(`curl -sS --noproxy '*' http://api.test:${h}/ok`, hosts) },
    {
      // TLS through transparent egress: the ClientHello (and its SNI) reaches the server untouched.
      id: 'curl-noproxy-tls',
      command: sh(`curl -sS -k --noproxy '*' https://tls.test:${ports.tls}/`, hosts),
    },
    {
      id: 'python-socket',
      command: py(
        `import socket\ns = socket.create_connection(("raw.test", ${ports.echo}))\ns.sendall(b"ping")\nprint(s.recv(4).decode())`,
        hosts,
      ),
    },
    {
      id: 'getent',
      command: sh(
        `getent hosts api.test; getent hosts api.test; getent hosts raw.test; python3 -c "import socket; print('reverse', socket.gethostbyaddr(socket.gethostbyname('api.test'))[0])"`,
        hosts,
      ),
    },
    {
      id: 'git-clone',
      command: sh(
        `git clone -q http://api.test:${h}/repo.git a && cat a/README && ${UNSET_PROXY} git clone -q http://api.test:${h}/repo.git b && cat b/README`,
        hosts,
      ),
    },
    { id: 'websocket', command: py(WEBSOCKET(h), hosts) },
    {
      id: 'dns-denied',
      command: sh(
        `getent hosts evil.test; echo getent $?; python3 -c '${DNS_QUERY}\nd = ask(query("evil.test", edns=True))\nprint("rcode", d[3] & 15, "ede", b"not on the allowlist" in d)'`,
        hosts,
      ),
    },
    {
      id: 'port-denied',
      command: sh(`curl -sS --noproxy '*' -i http://api.test/ | head -n1 | tr -d '\\r'`, hosts),
    },
    // The proxy-ignoring clients again, each on its own run, towards a name off the allowlist (refused by
    // the resolver) and towards an allowed name on a port it is not allowed on (refused by the proxy).
    {
      id: 'node-fetch-denied',
      command: sh(
        `node -e "fetch('http://evil.test:${h}/ok').then((r) => console.log(r.status), (e) => console.log(e.cause.code))"`,
        hosts,
      ),
    },
    { id: 'curl-noproxy-denied', command: sh(`curl -sS --noproxy '*' http://evil.test:${h}/ok`, hosts) },
    {
      id: 'python-socket-denied',
      command: py(
        `import socket\ntry:\n    socket.create_connection(("evil.test", ${ports.echo}), timeout=5); print("connected")\nexcept socket.gaierror as e:\n    print("gaierror", e.errno == socket.EAI_NONAME)`,
        hosts,
      ),
    },
    {
      id: 'git-denied',
      command: sh(`${UNSET_PROXY} git clone -q http://evil.test:${h}/repo.git c`, hosts),
    },
    {
      id: 'node-fetch-port-denied',
      command: sh(
        `node -e "fetch('http://api.test/ok').then(async (r) => console.log(r.status, (await r.text()).split(':')[0]), (e) => console.log(e.cause.code))"`,
        hosts,
      ),
    },
    {
      id: 'python-socket-port-denied',
      command: py(
        'import socket\ns = socket.create_connection(("raw.test", 443), timeout=5)\ns.sendall(b"\\x16\\x03\\x01\\x00\\x05hello")\ntry:\n    print("got", s.recv(100))\nexcept OSError as e:\n    print(type(e).__name__)',
        hosts,
      ),
    },
    {
      // The host's loopback service, its address allowed on other ports only: the proxy refuses it.
      id: 'probe-host-loopback',
      command: sh(
        probe('host loopback', `http://127.0.0.1:${h}/ok`),
        hosts.filter((entry) => entry !== `127.0.0.1:${h}`),
      ),
    },
    {
      id: 'probe-unknown-address',
      command: sh(probe('unknown address', `http://127.77.250.250:${h}/ok`), hosts),
    },
    {
      id: 'probe-closed-port',
      command: py(
        'import socket\ntry:\n    socket.create_connection((socket.gethostbyname("api.test"), 22), timeout=3); print("closed port: open")\nexcept OSError:\n    print("closed port: refused")',
        hosts,
      ),
    },
    // No network at all: each attempt is refused at once and recorded, naming the --net entry.
    {
      id: 'none-dns',
      command: sh(
        `node -e "fetch('http://api.test:${h}/ok').then((r) => console.log(r.status), (e) => console.log(e.cause.code))"; curl -sS http://api.test:${h}/ok; echo curl $?`,
        'none',
      ),
    },
    {
      id: 'none-address',
      command: sh(`curl -sS -m 5 http://10.255.0.1/; echo curl $?; env | grep -ci proxy`, 'none'),
    },
    {
      id: 'none-loopback',
      command: py(
        'import socket, threading\nl = socket.create_server(("127.0.0.1", 0)); p = l.getsockname()[1]\nt = threading.Thread(target=lambda: l.accept()[0].sendall(b"own")); t.start()\nprint(socket.create_connection(("127.0.0.1", p)).recv(10).decode())',
        'none',
      ),
    },
    { id: 'probe-dns-garbage', command: py(DNS_GARBAGE, hosts) },
    { id: 'probe-forged-report', command: py(FORGED_REPORT, hosts) },
  ];
}
