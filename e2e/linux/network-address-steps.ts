/**
 * The commands of network-addresses.test.ts, as harness steps: clients that ignore the proxy variables
 * (Node 20's fetch, `curl --noproxy '*'`, Python sockets) towards allowlist entries given as addresses
 * (IPv4 beyond 127.0.0.1, IPv6) and towards a name the host resolves itself, the refusals on the same
 * paths, and an HTTPS host behind a CA of the test's own.
 */

const sh = (script: string, hosts: readonly string[]) => ({
  program: 'sh',
  args: ['-c', script],
  capabilities: { spawnSubprocess: true, network: { kind: 'allowHosts', hosts } },
});
const py = (code: string, hosts: readonly string[]) =>
  sh(`exec python3 -c '${code.replaceAll("'", `'"'"'`)}'`, hosts);

/** A Python socket to HOST:PORT that sends `ping` and prints what comes back, or the error's name. */
const PING = (host: string, port: number) => `
import socket
try:
    s = socket.create_connection(("${host}", ${port}), timeout=5)
    s.sendall(b"ping")
    print(s.recv(4).decode() or "closed")
except OSError as e:
    print(type(e).__name__)
`;

const fetchText = (url: string) =>
  `node -e "fetch('${url}').then(async (r) => console.log(r.status, await r.text()), (e) => console.log(e.cause?.code ?? e.message))"`;

/** The ports of the servers the steps reach. */
export interface AddressPorts {
  /** HTTP on 127.0.0.2. */
  readonly web: number;
  /** Echo on 127.0.0.2. */
  readonly echo: number;
  /** HTTP on ::1. */
  readonly web6: number;
  /** HTTP on 127.0.0.2 that no entry allows (a host loopback service). */
  readonly hidden: number;
  /**
   * HTTP on the host's 127.0.0.1 that no entry allows; its port is an egress port all the same (an entry
   * names it for another address), so connections to it go through the bridge and the proxy.
   */
  readonly hostOnly: number;
}

/** Every spelling of the host's 127.0.0.1:PORT a client may try, each printed with its outcome. */
const LOOPBACK_SPELLINGS = (port: number) => `
import socket
for host in ("127.0.0.1", "0.0.0.0", "2130706433", "127.1", "::ffff:127.0.0.1", "::", "::1", "localhost"):
    try:
        s = socket.create_connection((host, ${port}), timeout=5)
        s.sendall(b"GET / HTTP/1.0\\r\\n\\r\\n")
        got = s.recv(200)
        print(host, "reached" if b"hello" in got else "refused")
    except OSError as e:
        print(host, "refused")
`;

/** The allowlist of the address steps. */
export function addressHosts(p: AddressPorts): string[] {
  return [
    `127.0.0.2:${p.web}`,
    `127.0.0.2:${p.echo}`,
    `[::1]:${p.web6}`,
    `hosts.test:${p.web}`,
    '127.0.0.4',
    'lan.test',
    `127.0.0.9:${p.hostOnly}`,
  ];
}

/** Every address step. */
export function addressSteps(p: AddressPorts): { id: string; command: unknown }[] {
  const hosts = addressHosts(p);
  return [
    { id: 'fetch-v4', command: sh(fetchText(`http://127.0.0.2:${p.web}/`), hosts) },
    { id: 'curl-v4', command: sh(`curl -sS --noproxy '*' http://127.0.0.2:${p.web}/`, hosts) },
    { id: 'python-v4', command: py(PING('127.0.0.2', p.echo), hosts) },
    { id: 'fetch-v6', command: sh(fetchText(`http://[::1]:${p.web6}/`), hosts) },
    { id: 'curl-v6', command: sh(`curl -sS --noproxy '*' 'http://[::1]:${p.web6}/'`, hosts) },
    {
      id: 'python-v6',
      command: py(PING('::1', p.web6).replace('b"ping"', 'b"GET / HTTP/1.0\\r\\n\\r\\n"'), hosts),
    },
    {
      // The name resolves on the host (the driver's resolver, as the host's /etc/hosts would), inside
      // through the sandbox's resolver: the sandbox's /etc/hosts has localhost alone.
      id: 'hosts-name',
      command: sh(
        `grep -v '^#' /etc/hosts; getent hosts hosts.test | cut -d. -f1-2; curl -sS --noproxy '*' http://hosts.test:${p.web}/; echo; ${fetchText(`http://hosts.test:${p.web}/`)}`,
        hosts,
      ),
    },
    // Refusals on the transparent path, each a denial: an address off the allowlist on an egress port
    // (an HTTP client gets the proxy's 403, a raw socket a reset), an allowed address on another egress
    // port, a name off the allowlist.
    {
      id: 'denied-address',
      command: sh(`curl -s --noproxy '*' -o /dev/null -w '%{http_code}' http://127.0.0.3:${p.web}/`, hosts),
    },
    { id: 'denied-address-raw', command: py(PING('10.255.0.9', p.echo), hosts) },
    { id: 'denied-address-v6', command: py(PING('2001:db8::9', p.web), hosts) },
    { id: 'denied-port', command: py(PING('127.0.0.2', p.web6), hosts) },
    // An allowed name the host resolves to a private address no entry allows.
    { id: 'denied-private', command: sh(fetchText(`http://lan.test:${p.web}/`), hosts) },
    { id: 'denied-name', command: sh(fetchText(`http://elsewhere.test:${p.web}/`), hosts) },
    // Outside the egress ports: the kernel refuses inside, the bridge reports it. An address allowed on
    // every port (through the proxy variables) is refused on a port transparent egress does not take.
    { id: 'denied-outside-egress', command: py(PING('127.0.0.4', p.hidden), hosts) },
    // Containment: a host loopback service on a port no entry names is not reached (the sandbox's own
    // loopback refuses it), nor is an address's other port.
    { id: 'probe-hidden-port', command: py(PING('127.0.0.2', p.hidden), hosts) },
    { id: 'probe-v6-hidden-port', command: py(PING('::1', p.hidden), hosts) },
    // The host's own 127.0.0.1 service on an egress port, by every spelling: each stays inside (the
    // sandbox's loopback) or is refused by the proxy.
    { id: 'probe-host-loopback', command: py(LOOPBACK_SPELLINGS(p.hostOnly), hosts) },
  ];
}

/**
 * The HTTPS steps: Node's fetch and curl to `tls.test`, behind the test's CA, past the proxy variables
 * (transparent egress: tiers 1–2) and through them (every tier).
 */
export function trustSteps(tlsPort: number): { id: string; command: unknown }[] {
  const hosts = [`tls.test:${tlsPort}`, `127.0.0.1:${tlsPort}`];
  return [
    { id: 'tls-fetch', command: sh(fetchText(`https://tls.test:${tlsPort}/`), hosts) },
    {
      id: 'tls-curl',
      command: sh(`curl -sS --noproxy '*' https://tls.test:${tlsPort}/ 2>&1; echo " exit $?"`, hosts),
    },
    {
      id: 'tls-curl-proxy',
      command: sh(`curl -sS https://tls.test:${tlsPort}/ 2>&1; echo " exit $?"`, hosts),
    },
    { id: 'tls-env', command: sh('env | grep -E "^(NODE_EXTRA_CA_CERTS|SSL_CERT_FILE)=" | sort', hosts) },
  ];
}
