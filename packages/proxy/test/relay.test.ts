import { randomBytes } from 'node:crypto';
import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { DownstreamReader } from '../src/downstream.js';
import { createStaticResolver, type ProxyServer, startProxy } from '../src/index.js';
import { rawConnect, readBytes, readUntilClose, sha256 } from './helpers.js';

// The upstream → client direction reads into buffers of its own (large ones once a tunnel is busy);
// these tests pin what that path must keep: every byte, in order, with backpressure, banners that arrive
// before the tunnel is answered, and half-close.

const servers: net.Server[] = [];
const accepted: net.Socket[] = [];
let proxy: ProxyServer | undefined;
afterEach(async () => {
  await proxy?.close();
  proxy = undefined;
  for (const s of accepted.splice(0)) s.destroy(); // half-open sockets would keep close() waiting
  for (const s of servers.splice(0)) await new Promise((r) => s.close(r));
});

async function tcpServer(onConnection: (socket: net.Socket) => void): Promise<number> {
  const server = net.createServer({ allowHalfOpen: true }, (socket) => {
    accepted.push(socket);
    socket.on('error', () => {});
    onConnection(socket);
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return (server.address() as net.AddressInfo).port;
}

async function proxyTo(port: number): Promise<ProxyServer> {
  proxy = await startProxy({ allow: [`127.0.0.1:${port}`], resolver: createStaticResolver({}, false) });
  return proxy;
}

/** Opens a tunnel to 127.0.0.1:port through CONNECT or SOCKS5 and returns the socket past the reply. */
async function tunnel(via: ProxyServer, kind: 'connect' | 'socks5', port: number): Promise<net.Socket> {
  const s = await rawConnect((via.address as { port: number }).port);
  if (kind === 'connect') {
    s.write(`CONNECT 127.0.0.1:${port} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`);
    const head = await readBytes(s, 39);
    expect(head.subarray(0, 39).toString()).toBe('HTTP/1.1 200 Connection Established\r\n\r\n');
    if (head.length > 39) s.unshift(head.subarray(39));
  } else {
    s.write(Buffer.from([5, 1, 0]));
    expect([...(await readBytes(s, 2))]).toEqual([5, 0]);
    s.write(Buffer.from([5, 1, 0, 1, 127, 0, 0, 1, port >> 8, port & 255]));
    const reply = await readBytes(s, 10);
    expect(reply[1]).toBe(0);
    if (reply.length > 10) s.unshift(reply.subarray(10));
  }
  return s;
}

describe.each(['connect', 'socks5'] as const)('relay through %s', (kind) => {
  it('delivers a banner the upstream sends before the client says anything', async () => {
    const port = await tcpServer((socket) => socket.end('220 banner from upstream\r\n'));
    const s = await tunnel(await proxyTo(port), kind, port);
    expect((await readUntilClose(s)).toString()).toBe('220 banner from upstream\r\n');
  });

  it('delivers 24 MiB intact to a client that stalls mid-stream, and ends it', async () => {
    const blob = randomBytes(24 * 1024 * 1024);
    const port = await tcpServer((socket) => socket.once('data', () => socket.end(blob)));
    const s = await tunnel(await proxyTo(port), kind, port);
    s.write('go');
    const chunks: Buffer[] = [];
    let got = 0;
    let stalled = false;
    const done = new Promise<void>((resolve) => s.once('end', resolve));
    s.on('data', (c: Buffer) => {
      chunks.push(c);
      got += c.length;
      if (!stalled && got > 4 * 1024 * 1024) {
        // Stop reading long enough for every buffer on the way to fill up.
        stalled = true;
        s.pause();
        setTimeout(() => s.resume(), 300);
      }
    });
    await done;
    expect(stalled).toBe(true);
    expect(got).toBe(blob.length);
    expect(sha256(Buffer.concat(chunks))).toBe(sha256(blob));
  });

  it('keeps many small writes in order', async () => {
    const parts = Array.from({ length: 500 }, (_, i) => `line ${i}\n`);
    const port = await tcpServer((socket) =>
      socket.once('data', () => {
        let i = 0;
        const next = () => {
          if (i === parts.length) {
            socket.end();
            return;
          }
          socket.write(parts[i++] as string);
          setImmediate(next);
        };
        next();
      }),
    );
    const s = await tunnel(await proxyTo(port), kind, port);
    s.write('go');
    expect((await readUntilClose(s)).toString()).toBe(parts.join(''));
  });

  it('passes the client half-close to the upstream and still delivers its answer', async () => {
    const port = await tcpServer((socket) => {
      const got: Buffer[] = [];
      socket.on('data', (c) => got.push(c));
      socket.once('end', () => socket.end(`upstream read ${Buffer.concat(got).length} bytes`));
    });
    const s = await tunnel(await proxyTo(port), kind, port);
    s.end(Buffer.alloc(100_000, 7));
    expect((await readUntilClose(s)).toString()).toBe('upstream read 100000 bytes');
  });
});

describe('DownstreamReader', () => {
  /** A connected pair: `source` reads through the reader; `peer` is the server side that writes to it. */
  async function pair(reader: DownstreamReader): Promise<{ source: net.Socket; peer: net.Socket }> {
    let peer: net.Socket | undefined;
    const accepted = new Promise<void>((resolve) => {
      void tcpServer((socket) => {
        peer = socket;
        resolve();
      }).then((port) => {
        const source = net.connect({ host: '127.0.0.1', port, allowHalfOpen: true, onread: reader.onread });
        sources.push(source);
      });
    });
    await accepted;
    const source = sources.at(-1) as net.Socket;
    if (source.connecting) await new Promise((r) => source.once('connect', r));
    return { source, peer: peer as net.Socket };
  }
  const sources: net.Socket[] = [];
  afterEach(() => {
    for (const s of sources.splice(0)) s.destroy();
  });

  it('holds what arrives before forward() and delivers it first, in order', async () => {
    const reader = new DownstreamReader();
    const { source, peer } = await pair(reader);
    peer.write('early-1 ');
    await new Promise((r) => setTimeout(r, 100)); // read and held: nobody to forward to yet
    peer.write('early-2 ');
    await new Promise((r) => setTimeout(r, 50));
    const sinkPort = await tcpServer(() => {});
    const received: Buffer[] = [];
    const sinkDone = new Promise<void>((resolve) => {
      servers.at(-1)?.once('connection', (s) => {
        s.on('data', (c: Buffer) => received.push(c));
        s.once('end', resolve);
      });
    });
    const sink = net.connect(sinkPort, '127.0.0.1');
    sources.push(sink);
    await new Promise((r) => sink.once('connect', r));
    reader.forward(source, sink);
    peer.end('late');
    await sinkDone;
    expect(Buffer.concat(received).toString()).toBe('early-1 early-2 late');
  });

  it('never reuses a buffer it handed to a write: chunks written stay intact while later reads land', async () => {
    const reader = new DownstreamReader();
    const { source, peer } = await pair(reader);
    const written: Buffer[] = [];
    // A sink that keeps every chunk it is given without copying and never drains by itself for a while.
    const sink = {
      write(chunk: Buffer) {
        written.push(chunk);
        return true;
      },
      end() {},
      once() {},
    } as unknown as net.Socket;
    reader.forward(source, sink);
    const blob = randomBytes(8 * 1024 * 1024);
    peer.end(blob);
    await new Promise((r) => source.once('end', r));
    expect(written.some((c) => c.length > 64 * 1024)).toBe(true); // the large-buffer path ran
    expect(sha256(Buffer.concat(written))).toBe(sha256(blob));
  });
});
