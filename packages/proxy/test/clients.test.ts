import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { SocksProxyAgent } from 'socks-proxy-agent';
import { ProxyAgent, request } from 'undici';
import { describe, expect, it, onTestFinished } from 'vitest';
import { createStaticResolver, startProxy } from '../src/index.js';
import { proxyFor, rawConnect, readBytes, readUntilClose, sha256, startUpstream } from './helpers.js';

const hasCurl = spawnSync('curl', ['--version']).status === 0;
// Asynchronous: the proxy under test runs in this process, so a blocking spawn would starve it.
const curl = (args: string[]) =>
  new Promise<{ status: number | null; stdout: Buffer; stderr: Buffer }>((resolve) => {
    const child = spawn('curl', ['-sS', '--max-time', '10', ...args]);
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (c) => out.push(c));
    child.stderr.on('data', (c) => err.push(c));
    child.on('close', (status) =>
      resolve({ status, stdout: Buffer.concat(out), stderr: Buffer.concat(err) }),
    );
  });

describe.runIf(hasCurl)('curl through the proxy (each mode moves the bytes intact)', () => {
  it.each([
    [
      'absolute-URI HTTP (-x)',
      (p: number, u: number) => ['-x', `http://127.0.0.1:${p}`, `http://api.test:${u}/blob`],
    ],
    [
      'CONNECT tunnel (-p -x)',
      (p: number, u: number) => ['-p', '-x', `http://127.0.0.1:${p}`, `http://api.test:${u}/blob`],
    ],
    [
      'SOCKS5 with proxy-side names (--socks5-hostname)',
      (p: number, u: number) => ['--socks5-hostname', `127.0.0.1:${p}`, `http://api.test:${u}/blob`],
    ],
    [
      'SOCKS5 with client-side addresses (--socks5)',
      (p: number, u: number) => ['--socks5', `127.0.0.1:${p}`, `http://127.0.0.1:${u}/blob`],
    ],
  ])('%s', async (_mode, args) => {
    const upstream = await startUpstream();
    const proxy = await proxyFor(upstream);
    const r = await curl(args(proxy.address!.port, upstream.port));
    expect(r.stderr.toString()).toBe('');
    expect(sha256(r.stdout)).toBe(sha256(upstream.blob));
  });

  it('uploads intact through CONNECT', async () => {
    const upstream = await startUpstream();
    const proxy = await proxyFor(upstream);
    const upDir = mkdtempSync(path.join(os.tmpdir(), 'aleph-proxy-'));
    onTestFinished(() => rmSync(upDir, { recursive: true, force: true }));
    const file = path.join(upDir, 'up.bin');
    const data = randomBytes(3 * 1024 * 1024 + 7);
    writeFileSync(file, data);
    const r = await curl([
      '-p',
      '-x',
      `http://127.0.0.1:${proxy.address!.port}`,
      '--data-binary',
      `@${file}`,
      `http://api.test:${upstream.port}/hash`,
    ]);
    expect(r.stdout.toString()).toBe(sha256(data));
  });

  it.each([
    ['-x', ['-x'], 403],
    ['-p -x', ['-p', '-x'], 403],
  ])('denies a host off the list through %s with 403 and never dials it', async (_m, flags, code) => {
    const upstream = await startUpstream();
    const proxy = await proxyFor(upstream);
    const r = await curl([
      ...flags,
      `http://127.0.0.1:${proxy.address!.port}`,
      '-o',
      '/dev/null',
      '-w',
      '%{http_code} %{http_connect}',
      `http://evil.test:${upstream.port}/`,
    ]);
    expect(r.stdout.toString()).toContain(String(code));
    expect(upstream.connections()).toBe(0);
  });

  it('denies through SOCKS5 (curl reports the proxy refusal) and never dials', async () => {
    const upstream = await startUpstream();
    const proxy = await proxyFor(upstream);
    const r = await curl([
      '--socks5-hostname',
      `127.0.0.1:${proxy.address!.port}`,
      `http://evil.test:${upstream.port}/`,
    ]);
    expect(r.status).toBe(97);
    expect(upstream.connections()).toBe(0);
  });
});

describe('Node clients', () => {
  it("undici's ProxyAgent (CONNECT even for http:// URLs)", async () => {
    const upstream = await startUpstream();
    const proxy = await proxyFor(upstream);
    const agent = new ProxyAgent(`http://127.0.0.1:${proxy.address!.port}`);
    try {
      const res = await request(`http://api.test:${upstream.port}/blob`, { dispatcher: agent });
      expect(sha256(Buffer.from(await res.body.arrayBuffer()))).toBe(sha256(upstream.blob));
      await expect(request(`http://evil.test:${upstream.port}/`, { dispatcher: agent })).rejects.toThrow(
        /403/,
      );
    } finally {
      await agent.close();
    }
    expect(upstream.connections()).toBe(1);
  });

  it('socks-proxy-agent (socks5h)', async () => {
    const upstream = await startUpstream();
    const proxy = await proxyFor(upstream);
    const agent = new SocksProxyAgent(`socks5h://127.0.0.1:${proxy.address!.port}`);
    const body = await new Promise<Buffer>((resolve, reject) => {
      http
        .get(`http://api.test:${upstream.port}/blob`, { agent }, (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c) => chunks.push(c));
          res.on('end', () => resolve(Buffer.concat(chunks)));
        })
        .on('error', reject);
    });
    expect(sha256(body)).toBe(sha256(upstream.blob));
    const denied = await new Promise<Error>((resolve) => {
      http
        .get(`http://evil.test:${upstream.port}/`, { agent }, () => resolve(new Error('unexpected')))
        .on('error', resolve);
    });
    expect(denied.message).toMatch(/NotAllowed/);
    agent.destroy();
  });

  it("an HTTP/1.0 CONNECT with no headers (pip's shape) gets an answer and a working tunnel", async () => {
    const upstream = await startUpstream();
    const proxy = await proxyFor(upstream);
    const socket = await rawConnect(proxy.address!.port);
    socket.write(`CONNECT api.test:${upstream.port} HTTP/1.0\r\n\r\n`);
    const head = (await readBytes(socket, 20)).toString('latin1');
    expect(head).toMatch(/^HTTP\/1\.0 200/);
    socket.write(`GET /x HTTP/1.0\r\nHost: api.test\r\n\r\n`);
    expect((await readUntilClose(socket)).toString()).toContain('upstream saw GET /x host=api.test');
  });

  it('an HTTP/1.0 absolute-URI request is answered and the connection closed', async () => {
    const upstream = await startUpstream();
    const proxy = await proxyFor(upstream);
    const socket = await rawConnect(proxy.address!.port);
    socket.write(`GET http://api.test:${upstream.port}/h HTTP/1.0\r\n\r\n`);
    const text = (await readUntilClose(socket)).toString();
    expect(text).toMatch(/^HTTP\/1\.[01] 200/);
    expect(text).toContain(`upstream saw GET /h host=api.test:${upstream.port}`);
  });

  it('Proxy-Connection is hop-by-hop: answered keep-alive with a length, never forwarded', async () => {
    const upstream = await startUpstream();
    const proxy = await proxyFor(upstream);
    const socket = await rawConnect(proxy.address!.port);
    socket.write(`GET http://api.test:${upstream.port}/h HTTP/1.0\r\nProxy-Connection: keep-alive\r\n\r\n`);
    const text = (await readBytes(socket, 120)).toString();
    const m = /Content-Length: (\d+)/i.exec(text);
    expect(m).not.toBeNull();
    expect(text).toContain('via=-');
  });
});

describe('resolution and unreachable targets', () => {
  it('refuses a name that resolves to a private address (403), without dialling', async () => {
    const upstream = await startUpstream();
    const proxy = await proxyFor(upstream, { allow: ['private.test'] });
    const socket = await rawConnect(proxy.address!.port);
    socket.write('CONNECT private.test:443 HTTP/1.1\r\nHost: private.test:443\r\n\r\n');
    const text = (await readUntilClose(socket)).toString();
    expect(text).toMatch(/^HTTP\/1\.1 403/);
    expect(text).toMatch(/X-Aleph-Proxy-Reason: private\.test resolves to 10\.1\.2\.3/);
  });

  it('answers 502 (not 403) for an allowed target that refuses the connection, and SOCKS5 0x05', async () => {
    const upstream = await startUpstream();
    const closedPort = upstream.port === 65535 ? 65534 : upstream.port + 1;
    const proxy = await proxyFor(upstream, { allow: [`127.0.0.1:${closedPort}`] });
    const a = await rawConnect(proxy.address!.port);
    a.write(`CONNECT 127.0.0.1:${closedPort} HTTP/1.1\r\n\r\n`);
    expect((await readUntilClose(a)).toString()).toMatch(/^HTTP\/1\.1 502/);
    const b = await rawConnect(proxy.address!.port);
    b.write(Buffer.from([5, 1, 0]));
    expect([...(await readBytes(b, 2))]).toEqual([5, 0]);
    b.write(Buffer.from([5, 1, 0, 1, 127, 0, 0, 1, closedPort >> 8, closedPort & 255]));
    expect((await readBytes(b, 10))[1]).toBe(0x05);
  });

  it('answers 502 when the name cannot be resolved', async () => {
    const upstream = await startUpstream();
    const proxy = await proxyFor(upstream, { allow: ['nowhere.test'] });
    const a = await rawConnect(proxy.address!.port);
    a.write('CONNECT nowhere.test:443 HTTP/1.1\r\n\r\n');
    expect((await readUntilClose(a)).toString()).toMatch(/^HTTP\/1\.1 502/);
  });
});

describe('CIDR entries: IP literals and resolved addresses', () => {
  /** A proxy with these entries; `lan.test` resolves to loopback (the upstream), `pub.test` to a public address. */
  async function cidrProxy(allow: string[], deny: string[] = []) {
    const proxy = await startProxy({
      allow,
      deny,
      resolver: createStaticResolver({ 'lan.test': ['127.0.0.1'], 'pub.test': ['93.184.216.34'] }, false),
    });
    onTestFinished(() => proxy.close());
    return proxy.address?.port ?? 0;
  }
  const connect = async (port: number, authority: string) => {
    const socket = await rawConnect(port);
    socket.write(`CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n\r\n`);
    const head = (await readBytes(socket, 12)).toString('latin1').slice(0, 12);
    socket.destroy();
    return head;
  };

  it('a CIDR allow is the explicit permission that lets an allowed name resolve into a private range', async () => {
    const upstream = await startUpstream();
    expect(await connect(await cidrProxy(['lan.test']), `lan.test:${upstream.port}`)).toBe('HTTP/1.1 403');
    const port = await cidrProxy(['lan.test', '127.0.0.0/8']);
    expect(await connect(port, `lan.test:${upstream.port}`)).toBe('HTTP/1.1 200');
    // The range lets addresses through; it does not allow names that resolve into it.
    expect(await connect(port, `other.test:${upstream.port}`)).toBe('HTTP/1.1 403');
  });

  it('a CIDR allow covers IP literals on every entry path; a port on it is honoured', async () => {
    const upstream = await startUpstream();
    const port = await cidrProxy([`127.0.0.0/8:${upstream.port}`]);
    expect(await connect(port, `127.0.0.1:${upstream.port}`)).toBe('HTTP/1.1 200');
    expect(await connect(port, `127.1.2.3:${upstream.port + 1}`)).toBe('HTTP/1.1 403');
    const s = await rawConnect(port);
    s.write(Buffer.from([5, 1, 0]));
    expect([...(await readBytes(s, 2))]).toEqual([5, 0]);
    s.write(Buffer.from([5, 1, 0, 1, 127, 0, 0, 1, upstream.port >> 8, upstream.port & 255]));
    expect((await readBytes(s, 10))[1]).toBe(0x00);
    s.destroy();
  });

  it('a CIDR deny wins, for literals and for the addresses a name resolves to, without dialling', async () => {
    const upstream = await startUpstream();
    const port = await cidrProxy(
      ['lan.test', 'pub.test', '127.0.0.0/8'],
      ['127.0.0.0/16', '93.184.216.0/24'],
    );
    const socket = await rawConnect(port);
    socket.write(`CONNECT lan.test:${upstream.port} HTTP/1.1\r\n\r\n`);
    const text = (await readUntilClose(socket)).toString();
    expect(text).toMatch(/^HTTP\/1\.1 403/);
    expect(text).toMatch(
      /X-Aleph-Proxy-Reason: lan\.test resolves to 127\.0\.0\.1, denied by 127\.0\.0\.0\/16/,
    );
    expect(await connect(port, 'pub.test:443')).toBe('HTTP/1.1 403');
    expect(await connect(port, `127.0.0.1:${upstream.port}`)).toBe('HTTP/1.1 403');
    expect(upstream.connections()).toBe(0);
  });

  it('a bracketed host that is not an IPv6 literal is malformed (400), not a name', async () => {
    const port = await cidrProxy(['lan.test']);
    expect(await connect(port, '[lan.test]:443')).toBe('HTTP/1.1 400');
    expect(await connect(port, '[127.0.0.1]:443')).toBe('HTTP/1.1 400');
  });
});
