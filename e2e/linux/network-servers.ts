/**
 * Servers on the host's loopback for the network e2e tests (nothing leaves the machine): an HTTP server
 * that also serves a git repository over git's dumb HTTP protocol and answers websocket upgrades with an
 * echo, a TLS server that says which name the client asked for (SNI), a raw TCP echo server, and an npm
 * registry stub serving one tiny package. Each counts what it saw.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import path from 'node:path';
import type { TLSSocket } from 'node:tls';

/** A running server: its port, how many connections it accepted, and how to stop it. */
export interface LocalServer {
  readonly port: number;
  connections(): number;
  close(): Promise<void>;
}

async function listening(server: net.Server, host = '127.0.0.1'): Promise<number> {
  await new Promise<void>((r) => server.listen(0, host, r));
  return (server.address() as net.AddressInfo).port;
}

/** `server` as a {@link LocalServer}; closing it ends every connection it accepted (upgraded ones too). */
function handle(server: net.Server, port: number, counted: () => number): LocalServer {
  const sockets = new Set<net.Socket>();
  server.on('connection', (s: net.Socket) => {
    sockets.add(s);
    s.once('close', () => sockets.delete(s));
  });
  return {
    port,
    connections: counted,
    close: () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  };
}

/** A bare repository with one commit (`hello from git`), ready for dumb HTTP (`git update-server-info`). */
export function makeDumbRepo(dir: string): string {
  const work = path.join(dir, 'work');
  const bare = path.join(dir, 'repo.git');
  mkdirSync(work, { recursive: true });
  const git = (cwd: string, ...args: string[]) =>
    execFileSync('git', ['-c', 'user.name=e2e', '-c', 'user.email=e2e@example.invalid', ...args], {
      cwd,
      stdio: 'pipe',
    });
  git(work, 'init', '-q', '-b', 'main');
  writeFileSync(path.join(work, 'README'), 'hello from git\n');
  git(work, 'add', 'README');
  git(work, 'commit', '-q', '-m', 'hello from git');
  git(dir, 'clone', '-q', '--bare', work, bare);
  git(bare, 'update-server-info');
  return bare;
}

/**
 * HTTP on loopback: `/ok` answers `hello`, `/repo.git/…` serves the files of `repo` (git's dumb
 * protocol), and an upgrade to websocket is accepted and everything sent after it echoed back.
 */
export async function startHttp(repo: string): Promise<LocalServer> {
  let count = 0;
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.pathname === '/ok') {
      res.end('hello');
      return;
    }
    const rel = url.pathname.startsWith('/repo.git/') ? url.pathname.slice('/repo.git/'.length) : undefined;
    const file = rel === undefined ? undefined : path.join(repo, path.normalize(rel));
    if (file?.startsWith(repo) && existsSync(file) && statSync(file).isFile()) {
      res.end(readFileSync(file));
      return;
    }
    res.writeHead(404).end('not found');
  });
  server.on('connection', () => count++);
  server.on('upgrade', (req, socket) => {
    const key = String(req.headers['sec-websocket-key'] ?? '');
    const accept = createHash('sha1').update(`${key}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`).digest('base64');
    socket.write(
      `HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`,
    );
    socket.on('data', (d) => socket.write(d));
  });
  return handle(server, await listening(server), () => count);
}

/**
 * HTTPS on loopback with a self-signed certificate made in `dir` (openssl): every request is answered
 * `hello NAME`, NAME being the server name the client sent in its TLS ClientHello (SNI), or `none`.
 */
export async function startHttps(dir: string): Promise<LocalServer> {
  mkdirSync(dir, { recursive: true });
  const key = path.join(dir, 'key.pem');
  const cert = path.join(dir, 'cert.pem');
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-days',
      '1',
      '-subj',
      '/CN=tls.test',
      '-keyout',
      key,
      '-out',
      cert,
    ],
    { stdio: 'pipe' },
  );
  let count = 0;
  const server = https.createServer({ key: readFileSync(key), cert: readFileSync(cert) }, (req, res) => {
    const name = (req.socket as TLSSocket).servername;
    res.end(`hello ${name === undefined || name === false ? 'none' : name}`);
  });
  server.on('secureConnection', () => count++);
  return handle(server, await listening(server), () => count);
}

/** A raw TCP server on `host` (default 127.0.0.1) that echoes what it receives. */
export async function startEcho(host?: string): Promise<LocalServer> {
  let count = 0;
  const server = net.createServer((s) => {
    count++;
    s.on('data', (d) => s.write(d));
    s.on('error', () => s.destroy());
  });
  return handle(server, await listening(server, host), () => count);
}

/** HTTP on `host` (an address of the host's loopback): every request is answered `hello HOST`. */
export async function startHello(host: string): Promise<LocalServer> {
  let count = 0;
  const server = http.createServer((_req, res) => res.end(`hello ${host}`));
  server.on('connection', () => count++);
  return handle(server, await listening(server, host), () => count);
}

/**
 * HTTPS on 127.0.0.1 with a certificate for `name` issued by a CA of its own, both made in `dir`
 * (openssl): `ca` is the CA's certificate file, which nothing trusts unless told to. Every request is
 * answered `hello NAME`.
 */
export async function startHttpsWithCa(dir: string, name: string): Promise<LocalServer & { ca: string }> {
  mkdirSync(dir, { recursive: true });
  const f = (n: string) => path.join(dir, n);
  const ssl = (...args: string[]) => execFileSync('openssl', args, { stdio: 'pipe' });
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  ssl(
    'req',
    '-x509',
    ...ec,
    '-days',
    '1',
    '-subj',
    '/CN=aleph e2e test CA',
    '-keyout',
    f('ca-key.pem'),
    '-out',
    f('ca.pem'),
  );
  ssl('req', '-new', ...ec, '-subj', `/CN=${name}`, '-keyout', f('key.pem'), '-out', f('req.pem'));
  writeFileSync(f('ext.cnf'), `subjectAltName=DNS:${name}\nbasicConstraints=CA:FALSE\n`);
  ssl(
    'x509',
    '-req',
    '-in',
    f('req.pem'),
    '-CA',
    f('ca.pem'),
    '-CAkey',
    f('ca-key.pem'),
    '-CAcreateserial',
    '-days',
    '1',
    '-extfile',
    f('ext.cnf'),
    '-out',
    f('cert.pem'),
  );
  let count = 0;
  const server = https.createServer(
    { key: readFileSync(f('key.pem')), cert: readFileSync(f('cert.pem')) },
    (_req, res) => res.end(`hello ${name}`),
  );
  server.on('secureConnection', () => count++);
  return { ...handle(server, await listening(server), () => count), ca: f('ca.pem') };
}

/**
 * An npm registry stub serving the package `aleph-tiny@1.0.0` (packed here by `npm pack`), its tarball URL
 * at `http://NAME:PORT/…`; `requests()` counts what it was asked.
 */
export async function startRegistry(
  dir: string,
  name: string,
): Promise<LocalServer & { requests(): number }> {
  const pkg = path.join(dir, 'aleph-tiny');
  mkdirSync(pkg, { recursive: true });
  writeFileSync(
    path.join(pkg, 'package.json'),
    JSON.stringify({ name: 'aleph-tiny', version: '1.0.0', main: 'index.js' }),
  );
  writeFileSync(path.join(pkg, 'index.js'), 'module.exports = 42;\n');
  const packed = execFileSync('npm', ['pack', '--silent', '--pack-destination', dir], {
    cwd: pkg,
    encoding: 'utf8',
  }).trim();
  const tarball = readFileSync(path.join(dir, packed));
  let requests = 0;
  let port = 0;
  const server = http.createServer((req, res) => {
    requests++;
    if (req.url === '/aleph-tiny') {
      const base = `http://${name}:${port}`;
      res.setHeader('content-type', 'application/json');
      res.end(
        JSON.stringify({
          name: 'aleph-tiny',
          'dist-tags': { latest: '1.0.0' },
          versions: {
            '1.0.0': {
              name: 'aleph-tiny',
              version: '1.0.0',
              dist: {
                tarball: `${base}/aleph-tiny/-/aleph-tiny-1.0.0.tgz`,
                shasum: createHash('sha1').update(tarball).digest('hex'),
                integrity: `sha512-${createHash('sha512').update(tarball).digest('base64')}`,
              },
            },
          },
        }),
      );
      return;
    }
    if (req.url === '/aleph-tiny/-/aleph-tiny-1.0.0.tgz') {
      res.end(tarball);
      return;
    }
    res.writeHead(404).end('{}');
  });
  port = await listening(server);
  return { ...handle(server, port, () => requests), requests: () => requests };
}
