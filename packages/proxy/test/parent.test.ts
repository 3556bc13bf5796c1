import http from 'node:http';
import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import {
  createStaticResolver,
  type ParentProxy,
  type ProxyServer,
  parseParentProxy,
  startProxy,
  TargetError,
} from '../src/index.js';
import {
  eventually,
  proxyFor,
  rawConnect,
  readBytes,
  readUntilClose,
  sha256,
  startUpstream,
  type Upstream,
} from './helpers.js';

describe('parseParentProxy', () => {
  it.each([
    ['proxy.corp:3128', { host: 'proxy.corp', port: 3128 }],
    ['http://10.0.0.1:8080', { host: '10.0.0.1', port: 8080 }],
    ['HTTP://proxy.corp:3128/', { host: 'proxy.corp', port: 3128 }],
    ['[::1]:3128', { host: '::1', port: 3128 }],
    ['http://[fd00::1]:8080/', { host: 'fd00::1', port: 8080 }],
  ])('reads %s', (text, expected) => {
    expect(parseParentProxy(text)).toEqual(expected);
  });

  it.each([
    ['https://proxy.corp:3128', /only an http:\/\/ proxy/],
    ['socks5://proxy.corp:1080', /not socks5:\/\//],
    ['http://user:secret@proxy.corp:3128', /credentials are not supported/],
    ['proxy.corp', /must be HOST:PORT/],
    ['http://proxy.corp:3128/path', /must be HOST:PORT/],
    ['proxy.corp:0', /not a number from 1 to 65535/],
    ['proxy.corp:70000', /above 65535/],
  ])('refuses %s, saying why', (text, why) => {
    expect(() => parseParentProxy(text)).toThrow(TargetError);
    expect(() => parseParentProxy(text)).toThrow(why);
    expect(() => parseParentProxy(text)).toThrow(JSON.stringify(text));
  });
});

const proxies: ProxyServer[] = [];
afterEach(async () => {
  for (const p of proxies.splice(0)) await p.close();
});

/** A proxy that reaches the upstream only through `parent`. */
async function childOf(parent: ParentProxy, upstream: Upstream): Promise<ProxyServer> {
  const child = await startProxy({
    allow: ['api.test', `127.0.0.1:${upstream.port}`],
    resolver: createStaticResolver({ 'api.test': ['127.0.0.1'], 'evil.test': ['127.0.0.1'] }, false),
    parent,
  });
  proxies.push(child);
  return child;
}
const portOf = (p: ProxyServer) => (p.address as { port: number }).port;

async function viaConnect(proxy: ProxyServer, authority: string): Promise<Buffer> {
  const s = await rawConnect(portOf(proxy));
  s.write(`CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n\r\n`);
  const head = await readBytes(s, 12);
  if (!head.toString('latin1').startsWith('HTTP/1.1 200'))
    return Buffer.concat([head, await readUntilClose(s)]);
  let got = head;
  while (got.length < 39) got = Buffer.concat([got, await readBytes(s, 39 - got.length)]);
  const after = got.subarray(39);
  s.write(`GET /blob HTTP/1.1\r\nHost: ${authority}\r\nConnection: close\r\n\r\n`);
  const response = Buffer.concat([after, await readUntilClose(s)]);
  return response.subarray(response.indexOf('\r\n\r\n') + 4);
}

describe('a parent proxy', () => {
  it('carries CONNECT, SOCKS5 and absolute-URI requests, and is asked for the checked address', async () => {
    const upstream = await startUpstream();
    const parent = await proxyFor(upstream);
    const asked: string[] = [];
    const seen = (m: unknown) => asked.push(`${(m as { host: string }).host}`);
    const { subscribe, unsubscribe } = await import('node:diagnostics_channel');
    subscribe('aleph:proxy', seen);
    try {
      const child = await childOf({ host: '127.0.0.1', port: portOf(parent) }, upstream);
      expect(sha256(await viaConnect(child, `api.test:${upstream.port}`))).toBe(sha256(upstream.blob));

      const socks = await rawConnect(portOf(child));
      socks.write(Buffer.from([5, 1, 0]));
      expect([...(await readBytes(socks, 2))]).toEqual([5, 0]);
      const name = Buffer.from('api.test');
      socks.write(
        Buffer.concat([
          Buffer.from([5, 1, 0, 3, name.length]),
          name,
          Buffer.from([upstream.port >> 8, upstream.port & 255]),
        ]),
      );
      const reply = await readBytes(socks, 10);
      expect(reply[1]).toBe(0);
      socks.write(`GET /blob HTTP/1.1\r\nHost: api.test\r\nConnection: close\r\n\r\n`);
      const raw = Buffer.concat([reply.subarray(10), await readUntilClose(socks)]);
      expect(sha256(raw.subarray(raw.indexOf('\r\n\r\n') + 4))).toBe(sha256(upstream.blob));

      const body = await new Promise<Buffer>((resolve, reject) => {
        const req = http.request(
          {
            host: '127.0.0.1',
            port: portOf(child),
            path: `http://api.test:${upstream.port}/blob`,
            agent: false,
          },
          (res) => {
            const parts: Buffer[] = [];
            res.on('data', (c) => parts.push(c));
            res.on('end', () => resolve(Buffer.concat(parts)));
          },
        );
        req.on('error', reject);
        req.end();
      });
      expect(sha256(body)).toBe(sha256(upstream.blob));
      // Records come when a tunnel closes. The child checked api.test; the parent was asked only for
      // the address the child resolved.
      const count = (host: string) => asked.filter((h) => h === host).length;
      expect(await eventually(() => count('api.test') === 3 && count('127.0.0.1') === 3)).toBe(true);
    } finally {
      unsubscribe('aleph:proxy', seen);
    }
    expect(upstream.connections()).toBe(3);
  });

  it('answers 502 (not 403) when the parent refuses, and 502 when the parent is down', async () => {
    const upstream = await startUpstream();
    const strict = await startProxy({ allow: ['192.0.2.1'] });
    proxies.push(strict);
    const refused = await childOf({ host: '127.0.0.1', port: portOf(strict) }, upstream);
    const r = (await viaConnect(refused, `api.test:${upstream.port}`)).toString('latin1');
    expect(r).toMatch(/^HTTP\/1\.1 502 /);
    expect(r).toMatch(/parent proxy 127\.0\.0\.1:\d+ refused 127\.0\.0\.1:\d+: HTTP\/1\.1 403/);

    const closed = net.createServer();
    await new Promise<void>((res) => closed.listen(0, '127.0.0.1', res));
    const deadPort = (closed.address() as net.AddressInfo).port;
    await new Promise((res) => closed.close(res));
    const orphan = await childOf({ host: '127.0.0.1', port: deadPort }, upstream);
    expect((await viaConnect(orphan, `api.test:${upstream.port}`)).toString('latin1')).toMatch(
      /^HTTP\/1\.1 502 /,
    );
    expect(upstream.connections()).toBe(0);
  });

  it('leaks nothing when the client leaves while a silent parent is still to answer', async () => {
    const upstream = await startUpstream();
    const held: net.Socket[] = [];
    // Silent until told to answer; like any server, it closes its side when its peer has.
    const silent = net.createServer({ allowHalfOpen: true }, (s) => {
      held.push(
        s
          .on('error', () => {})
          .on('end', () => s.end())
          .resume(),
      );
    });
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    try {
      const child = await childOf(
        { host: '127.0.0.1', port: (silent.address() as net.AddressInfo).port },
        upstream,
      );
      const viaHttp = await rawConnect(portOf(child));
      viaHttp.write(`GET http://api.test:${upstream.port}/blob HTTP/1.1\r\nHost: api.test\r\n\r\n`);
      const viaConnect = await rawConnect(portOf(child));
      viaConnect.write(`CONNECT api.test:${upstream.port} HTTP/1.1\r\n\r\n`);
      expect(await eventually(() => held.length === 2)).toBe(true);
      viaHttp.destroy();
      viaConnect.destroy();
      // The parent answers late: both tunnels close like any tunnel whose client has gone.
      for (const s of held) s.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      expect(await eventually(() => child.stats().openSockets === 0)).toBe(true);
      expect(await eventually(() => held.every((s) => s.destroyed || s.readableEnded))).toBe(true);
      expect(upstream.connections()).toBe(0);
    } finally {
      for (const s of held) s.destroy();
      await new Promise((r) => silent.close(r));
    }
  });

  it('never asks the parent about a host this proxy denies', async () => {
    const upstream = await startUpstream();
    const parent = await proxyFor(upstream);
    const child = await childOf({ host: '127.0.0.1', port: portOf(parent) }, upstream);
    const before = parent.stats().connections;
    expect((await viaConnect(child, `evil.test:${upstream.port}`)).toString('latin1')).toMatch(
      /^HTTP\/1\.1 403 /,
    );
    expect(parent.stats().connections).toBe(before);
  });
});
