import diagnosticsChannel from 'node:diagnostics_channel';
import { readFileSync } from 'node:fs';
import net from 'node:net';
import { describe, expect, it } from 'vitest';
import { PROXY_CHANNEL, type ProxyRecord, startProxy } from '../src/index.js';
import { eventually, proxyFor, rawConnect, readBytes, readUntilClose, startUpstream } from './helpers.js';

/** A TCP echo server on loopback that ends its side when the client ends (half-close aware). */
async function echoServer(): Promise<{ port: number; open: () => number; close: () => Promise<void> }> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer({ allowHalfOpen: true }, (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
    s.on('error', () => {});
    s.on('data', (c) => s.write(c));
    s.on('end', () => s.end());
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', 1024, r));
  return {
    port: (server.address() as net.AddressInfo).port,
    open: () => sockets.size,
    close: () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  };
}

async function connectTunnel(proxyPort: number, target: string): Promise<net.Socket> {
  const s = await rawConnect(proxyPort);
  s.write(`CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n\r\n`);
  const head = (await readBytes(s, 12)).toString();
  if (!head.startsWith('HTTP/1.1 200')) throw new Error(`tunnel refused: ${head}`);
  // The rest of the 200 response head.
  return s;
}

const openFilesLimit = Number(
  /Max open files\s+(\d+)/.exec(readFileSync('/proc/self/limits', 'utf8'))?.[1] ?? 0,
);

describe('hostile clients', () => {
  it('oversized request headers get 431', async () => {
    const upstream = await startUpstream();
    const proxy = await proxyFor(upstream, { limits: { maxHeaderBytes: 4096 } });
    const s = await rawConnect(proxy.address!.port);
    s.write(`GET http://api.test:${upstream.port}/ HTTP/1.1\r\nX-Big: ${'a'.repeat(8000)}\r\n\r\n`);
    expect((await readUntilClose(s)).toString()).toMatch(/^HTTP\/1\.1 431/);
    expect(upstream.connections()).toBe(0);
    expect(await eventually(() => proxy.stats().openSockets === 0)).toBe(true);
  });

  it('slowloris: a request head that never completes is cut off by the handshake timeout', async () => {
    const upstream = await startUpstream();
    const proxy = await proxyFor(upstream, { limits: { handshakeTimeoutMs: 300 } });
    const s = await rawConnect(proxy.address!.port);
    s.write('GET http://api.test/ HTTP/1.1\r\n');
    const drip = setInterval(() => s.writable && s.write('X-A: b\r\n'), 50);
    try {
      await readUntilClose(s, 5000);
    } finally {
      clearInterval(drip);
    }
    expect(s.destroyed || s.readableEnded).toBe(true);
    expect(await eventually(() => proxy.stats().openSockets === 0)).toBe(true);
  });

  it('a silent connection is closed by the first-byte timeout; a stalled SOCKS handshake too', async () => {
    const upstream = await startUpstream();
    const proxy = await proxyFor(upstream, { limits: { firstByteTimeoutMs: 200, handshakeTimeoutMs: 200 } });
    const silent = await rawConnect(proxy.address!.port);
    const stalled = await rawConnect(proxy.address!.port);
    stalled.write(Buffer.from([5, 1, 0]));
    await Promise.all([readUntilClose(silent), readUntilClose(stalled)]);
    expect(await eventually(() => proxy.stats().openSockets === 0)).toBe(true);
  });

  it('half-open tunnels: a client that ends its side still gets the reply, then everything closes', async () => {
    const echo = await echoServer();
    try {
      const proxy = await startProxy({ allow: [`127.0.0.1:${echo.port}`] });
      const s = await connectTunnel(proxy.address!.port, `127.0.0.1:${echo.port}`);
      const reply = readUntilClose(s);
      s.end('ping-half-open');
      expect((await reply).toString()).toContain('ping-half-open');
      expect(await eventually(() => proxy.stats().openSockets === 0 && echo.open() === 0)).toBe(true);
      await proxy.close();
    } finally {
      await echo.close();
    }
  });

  it('an idle tunnel is closed by the idle timeout', async () => {
    const echo = await echoServer();
    try {
      const proxy = await startProxy({ allow: [`127.0.0.1:${echo.port}`], limits: { idleTimeoutMs: 200 } });
      const s = await connectTunnel(proxy.address!.port, `127.0.0.1:${echo.port}`);
      await readUntilClose(s);
      expect(await eventually(() => proxy.stats().openSockets === 0 && echo.open() === 0)).toBe(true);
      await proxy.close();
    } finally {
      await echo.close();
    }
  });

  it('a client that disconnects mid-transfer leaves nothing open', async () => {
    const upstream = await startUpstream();
    const proxy = await proxyFor(upstream);
    const s = await rawConnect(proxy.address!.port);
    s.write(`CONNECT api.test:${upstream.port} HTTP/1.1\r\n\r\n`);
    await readBytes(s, 12);
    s.write('GET /blob HTTP/1.1\r\nHost: api.test\r\n\r\n');
    await readBytes(s, 100_000);
    s.destroy();
    expect(await eventually(() => proxy.stats().openSockets === 0 && proxy.stats().activeTunnels === 0)).toBe(
      true,
    );
  });

  it('the tunnel limit answers 503 instead of opening more', async () => {
    const echo = await echoServer();
    try {
      const proxy = await startProxy({ allow: [`127.0.0.1:${echo.port}`], limits: { maxTunnels: 2 } });
      const a = await connectTunnel(proxy.address!.port, `127.0.0.1:${echo.port}`);
      const b = await connectTunnel(proxy.address!.port, `127.0.0.1:${echo.port}`);
      const c = await rawConnect(proxy.address!.port);
      c.write(`CONNECT 127.0.0.1:${echo.port} HTTP/1.1\r\n\r\n`);
      expect((await readUntilClose(c)).toString()).toMatch(/^HTTP\/1\.1 503/);
      a.destroy();
      b.destroy();
      expect(await eventually(() => proxy.stats().openSockets === 0)).toBe(true);
      await proxy.close();
    } finally {
      await echo.close();
    }
  });

  it.runIf(openFilesLimit >= 6000)(
    `1,000 concurrent tunnels all work, then stats() shows zero open sockets (needs >= 6000 open files; have ${openFilesLimit})`,
    async () => {
      const echo = await echoServer();
      try {
        const proxy = await startProxy({ allow: [`127.0.0.1:${echo.port}`] });
        const tunnels = await Promise.all(
          Array.from({ length: 1000 }, () => connectTunnel(proxy.address!.port, `127.0.0.1:${echo.port}`)),
        );
        expect(proxy.stats().activeTunnels).toBe(1000);
        const replies = await Promise.all(
          tunnels.map((t, i) => {
            const r = readBytes(t, `tunnel-${i}`.length);
            t.write(`tunnel-${i}`);
            return r;
          }),
        );
        expect(replies.map((r) => r.toString())).toEqual(replies.map((_r, i) => `tunnel-${i}`));
        for (const t of tunnels) t.destroy();
        expect(
          await eventually(
            () => proxy.stats().openSockets === 0 && proxy.stats().activeTunnels === 0,
            10_000,
          ),
        ).toBe(true);
        await proxy.close();
      } finally {
        await echo.close();
      }
    },
    60_000,
  );
});

describe('SOCKS5 protocol replies (RFC 1928)', () => {
  const handshake = async (port: number) => {
    const s = await rawConnect(port);
    s.write(Buffer.from([5, 1, 0]));
    expect([...(await readBytes(s, 2))]).toEqual([5, 0]);
    return s;
  };
  it.each([
    ['BIND is refused with 0x07', [5, 2, 0, 1, 127, 0, 0, 1, 0, 80], 0x07],
    ['UDP ASSOCIATE is refused with 0x07', [5, 3, 0, 1, 127, 0, 0, 1, 0, 80], 0x07],
    ['an unknown address type gets 0x08', [5, 1, 0, 9, 1, 2, 3, 4, 0, 80], 0x08],
    ['a bad version gets 0x01', [4, 1, 0, 1, 127, 0, 0, 1, 0, 80], 0x01],
    ['port 0 gets 0x01', [5, 1, 0, 1, 127, 0, 0, 1, 0, 0], 0x01],
    ['a denied domain gets 0x02', [5, 1, 0, 3, 9, ...Buffer.from('evil.test'), 0, 80], 0x02],
    ['a malformed domain gets 0x01', [5, 1, 0, 3, 5, ...Buffer.from('a b/c'), 0, 80], 0x01],
    [
      'a bracketed domain that is not IPv6 gets 0x01',
      [5, 1, 0, 3, 10, ...Buffer.from('[api.test]'), 0, 80],
      0x01,
    ],
    ['a denied IPv6 literal gets 0x02', [5, 1, 0, 4, ...Array(15).fill(0), 1, 0, 80], 0x02],
  ])('%s', async (_name, request, code) => {
    const upstream = await startUpstream();
    const proxy = await proxyFor(upstream);
    const s = await handshake(proxy.address!.port);
    s.write(Buffer.from(request));
    const reply = await readBytes(s, 10);
    expect(reply[0]).toBe(5);
    expect(reply[1]).toBe(code);
    expect(upstream.connections()).toBe(0);
  });

  it('no acceptable auth method gets 0xFF; SOCKS4 gets 0x5B', async () => {
    const upstream = await startUpstream();
    const proxy = await proxyFor(upstream);
    const a = await rawConnect(proxy.address!.port);
    a.write(Buffer.from([5, 1, 2]));
    expect([...(await readBytes(a, 2))]).toEqual([5, 0xff]);
    const b = await rawConnect(proxy.address!.port);
    b.write(Buffer.from([4, 1, 0, 80, 127, 0, 0, 1, 0]));
    expect((await readBytes(b, 2))[1]).toBe(0x5b);
  });

  it('accepts a client that sends greeting, request and data in one packet', async () => {
    const echo = await echoServer();
    try {
      const proxy = await startProxy({ allow: [`127.0.0.1:${echo.port}`] });
      const s = await rawConnect(proxy.address!.port);
      s.write(
        Buffer.from([
          5,
          1,
          0,
          5,
          1,
          0,
          1,
          127,
          0,
          0,
          1,
          echo.port >> 8,
          echo.port & 255,
          ...Buffer.from('early'),
        ]),
      );
      const got = await readBytes(s, 2 + 10 + 5);
      expect([...got.subarray(0, 2)]).toEqual([5, 0]);
      expect(got[3]).toBe(0);
      expect(got.subarray(12).toString()).toBe('early');
      await proxy.close();
    } finally {
      await echo.close();
    }
  });
});

describe('audit on aleph:proxy', () => {
  it('publishes each decision with host, port, entry, verdict, pattern and bytes on close', async () => {
    const records: ProxyRecord[] = [];
    const handler = (m: unknown) => records.push(m as ProxyRecord);
    diagnosticsChannel.subscribe(PROXY_CHANNEL, handler);
    try {
      const upstream = await startUpstream();
      const proxy = await proxyFor(upstream);
      const ok = await rawConnect(proxy.address!.port);
      ok.write(`CONNECT api.test:${upstream.port} HTTP/1.1\r\n\r\n`);
      await readBytes(ok, 12);
      ok.write('GET /x HTTP/1.0\r\nHost: api.test\r\n\r\n');
      await readUntilClose(ok);
      const no = await rawConnect(proxy.address!.port);
      no.write('CONNECT evil.test:443 HTTP/1.1\r\n\r\n');
      await readUntilClose(no);
      await eventually(() => records.some((r) => r.verdict === 'allow' && r.port === upstream.port));
      expect(records).toContainEqual(
        expect.objectContaining({
          entry: 'connect',
          host: 'api.test',
          port: upstream.port,
          verdict: 'allow',
          pattern: 'api.test',
          address: '127.0.0.1',
        }),
      );
      const allowed = records.find((r) => r.verdict === 'allow' && r.port === upstream.port) as ProxyRecord;
      expect(allowed.bytesUp).toBeGreaterThan(10);
      expect(allowed.bytesDown).toBeGreaterThan(10);
      expect(records).toContainEqual(
        expect.objectContaining({
          entry: 'connect',
          host: 'evil.test',
          verdict: 'deny',
          reason: 'not on the allowlist',
        }),
      );
    } finally {
      diagnosticsChannel.unsubscribe(PROXY_CHANNEL, handler);
    }
  });
});

describe('request heads in UTF-8', () => {
  /** A proxy allowing `bücher.test` (sent as UTF-8 or as punycode), resolved to the upstream. */
  async function idnProxy(upstreamPort: number) {
    const proxy = await startProxy({
      allow: ['bücher.test', `127.0.0.1:${upstreamPort}`],
      resolver: async (name) => (name === 'xn--bcher-kva.test' ? ['127.0.0.1'] : []),
    });
    return { proxy, port: proxy.address?.port ?? 0 };
  }

  /** Sends `head` as raw bytes and returns the status line of the reply. */
  async function statusOf(port: number, head: Buffer): Promise<string> {
    const s = await rawConnect(port);
    s.write(head);
    const reply = await readBytes(s, 12);
    s.destroy();
    return reply.toString('latin1').slice(0, 12);
  }

  it('an IDN sent unencoded in CONNECT is the same name as its punycode, whatever its case', async () => {
    const upstream = await startUpstream();
    const { proxy, port } = await idnProxy(upstream.port);
    try {
      for (const host of ['bücher.test', 'BÜCHER.test', 'xn--bcher-kva.test']) {
        const authority = `${host}:${upstream.port}`;
        expect(
          await statusOf(port, Buffer.from(`CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n\r\n`)),
        ).toBe('HTTP/1.1 200');
        // pip's shape: HTTP/1.0, no headers.
        expect(await statusOf(port, Buffer.from(`CONNECT ${authority} HTTP/1.0\r\n\r\n`))).toBe(
          'HTTP/1.0 200',
        );
      }
      // A host that is not UTF-8 (latin1 "ü", one byte) is malformed, not some other name.
      const latin1 = Buffer.concat([
        Buffer.from('CONNECT b'),
        Buffer.from([0xfc]),
        Buffer.from(`cher.test:${upstream.port} HTTP/1.1\r\n\r\n`),
      ]);
      expect(await statusOf(port, latin1)).toBe('HTTP/1.1 400');
      expect(
        await statusOf(port, Buffer.from(`CONNECT bücher.other:${upstream.port} HTTP/1.1\r\n\r\n`)),
      ).toBe('HTTP/1.1 403');
    } finally {
      await proxy.close();
    }
  });

  it('an absolute URL in raw UTF-8 is read as UTF-8: its punycode form reaches the upstream, as for CONNECT', async () => {
    const upstream = await startUpstream();
    const { proxy, port } = await idnProxy(upstream.port);
    try {
      for (const host of ['bücher.test', 'BÜCHER.test', 'xn--bcher-kva.test']) {
        const s = await rawConnect(port);
        s.write(
          Buffer.from(
            `GET http://${host}:${upstream.port}/café HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`,
          ),
        );
        const reply = (await readUntilClose(s)).toString('utf8');
        expect(reply).toMatch(/^HTTP\/1\.1 200/);
        expect(reply).toContain(`upstream saw GET /caf%C3%A9 host=xn--bcher-kva.test:${upstream.port}`);
      }
      // Not UTF-8 (latin1 "ü", one byte): malformed, not some other name.
      const latin1 = await rawConnect(port);
      latin1.write(
        Buffer.concat([
          Buffer.from('GET http://b'),
          Buffer.from([0xfc]),
          Buffer.from(`cher.test:${upstream.port}/ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`),
        ]),
      );
      expect((await readUntilClose(latin1)).toString('latin1')).toMatch(/^HTTP\/1\.1 400/);
      // A UTF-8 name that is not allowed is denied like its punycode.
      const other = await rawConnect(port);
      other.write(
        Buffer.from(
          `GET http://bücher.other:${upstream.port}/ HTTP/1.1\r\nHost: bücher.other\r\nConnection: close\r\n\r\n`,
        ),
      );
      expect((await readUntilClose(other)).toString('latin1')).toMatch(/^HTTP\/1\.1 403/);
    } finally {
      await proxy.close();
    }
  });
});
