import { createHash, randomBytes } from 'node:crypto';
import http from 'node:http';
import net from 'node:net';
import { afterEach } from 'vitest';
import { createStaticResolver, type ProxyOptions, type ProxyServer, startProxy } from '../src/index.js';

export const sha256 = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');

/** A local upstream: GET /blob serves 1 MiB of random bytes, POST /hash answers the body's SHA-256. */
export interface Upstream {
  readonly port: number;
  readonly blob: Buffer;
  /** TCP connections the upstream accepted. */
  connections(): number;
  close(): Promise<void>;
}

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()?.();
});

export async function startUpstream(): Promise<Upstream> {
  const blob = randomBytes(1024 * 1024);
  let connections = 0;
  const server = http.createServer((req, res) => {
    if (req.url === '/blob') {
      res.writeHead(200, { 'content-length': blob.length });
      res.end(blob);
      return;
    }
    if (req.url === '/hash') {
      const h = createHash('sha256');
      req.on('data', (c) => h.update(c));
      req.on('end', () => res.end(h.digest('hex')));
      return;
    }
    res.end(
      `upstream saw ${req.method} ${req.url} host=${req.headers.host} via=${req.headers['proxy-connection'] ?? '-'}`,
    );
  });
  server.on('connection', () => connections++);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as net.AddressInfo).port;
  const upstream: Upstream = {
    port,
    blob,
    connections: () => connections,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
  cleanups.push(upstream.close);
  return upstream;
}

/** A proxy allowing `api.test` (resolved to 127.0.0.1) and loopback on the upstream port only. */
export async function proxyFor(upstream: Upstream, extra: Partial<ProxyOptions> = {}): Promise<ProxyServer> {
  const proxy = await startProxy({
    allow: ['api.test', `127.0.0.1:${upstream.port}`, ...(extra.allow ?? [])],
    deny: extra.deny ?? [],
    resolver: createStaticResolver(
      { 'api.test': ['127.0.0.1'], 'evil.test': ['127.0.0.1'], 'private.test': ['10.1.2.3'] },
      false,
    ),
    ...(extra.limits === undefined ? {} : { limits: extra.limits }),
    ...(extra.unixPath === undefined ? {} : { unixPath: extra.unixPath }),
  });
  cleanups.push(() => proxy.close());
  return proxy;
}

/** Resolves when `check` holds (polling), or after `ms`. */
export async function eventually(check: () => boolean, ms = 3000): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (check()) return true;
    await new Promise((r) => setTimeout(r, 20));
  }
  return check();
}

/** A raw client socket with a helper to read until a byte count or close. */
export async function rawConnect(port: number): Promise<net.Socket> {
  const socket = net.connect(port, '127.0.0.1');
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  cleanups.push(async () => {
    socket.destroy();
  });
  return socket;
}

export function readBytes(socket: net.Socket, n: number, ms = 3000): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    let buf = Buffer.alloc(0);
    const timer = setTimeout(() => reject(new Error(`timed out with ${buf.length}/${n} bytes`)), ms);
    const onData = (c: Buffer) => {
      buf = Buffer.concat([buf, c]);
      if (buf.length >= n) finish();
    };
    const finish = () => {
      clearTimeout(timer);
      socket.removeListener('data', onData);
      resolve(buf);
    };
    socket.on('data', onData);
    socket.once('close', finish);
  });
}

export function readUntilClose(socket: net.Socket, ms = 5000): Promise<Buffer> {
  return readBytes(socket, Number.POSITIVE_INFINITY, ms);
}
