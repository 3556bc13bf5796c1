import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { SocksProxyAgent } from 'socks-proxy-agent';
import { afterEach, describe, expect, it } from 'vitest';
import { createStaticResolver, type ProxyEntrance } from '../src/index.js';
import { ProxyPool } from '../src/pool.js';
import { proxyFor, startUpstream } from './helpers.js';

/** Sends `text` on a fresh connection to `at` and returns everything the proxy answered. */
function exchange(at: { port: number } | string, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = typeof at === 'string' ? net.connect(at) : net.connect(at.port, '127.0.0.1');
    let got = '';
    s.on('data', (d) => {
      got += d.toString('latin1');
    });
    s.once('connect', () => s.write(text));
    s.once('error', reject);
    s.once('close', () => resolve(got));
    setTimeout(() => s.end(), 300);
  });
}

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe('entrances: refusals attributed to one user, typed', () => {
  it('keeps each entrance its own denials: host, port, private address, deny list', async () => {
    const upstream = await startUpstream();
    const proxy = await proxyFor(upstream, {
      allow: ['private.test', 'ports.test:8443'],
      deny: ['blocked.test'],
    });
    const a = await proxy.openEntrance({});
    const b = await proxy.openEntrance({});
    const at = a.address as { port: number };
    expect(await exchange(at, 'CONNECT evil.test:443 HTTP/1.1\r\n\r\n')).toMatch(/^HTTP\/1\.1 403/);
    expect(await exchange(at, 'CONNECT ports.test:443 HTTP/1.1\r\n\r\n')).toMatch(/^HTTP\/1\.1 403/);
    expect(await exchange(at, 'CONNECT private.test:443 HTTP/1.1\r\n\r\n')).toMatch(/^HTTP\/1\.1 403/);
    expect(await exchange(at, 'GET http://blocked.test/ HTTP/1.1\r\nHost: blocked.test\r\n\r\n')).toMatch(
      /^HTTP\/1\.1 403/,
    );
    // Twice: recorded once.
    await exchange(at, 'CONNECT evil.test:443 HTTP/1.1\r\n\r\n');
    const denials = await a.settle();
    expect(denials).toEqual([
      {
        kind: 'network.host',
        target: 'evil.test:443',
        reason: 'evil.test is not on the allowlist',
        allowEntry: 'evil.test',
      },
      {
        kind: 'network.port',
        target: 'ports.test:443',
        reason: 'ports.test is allowed only on port 8443, not 443',
        allowEntry: 'ports.test:443',
      },
      {
        kind: 'network.private-address',
        target: 'private.test:443',
        reason: expect.stringMatching(/^private\.test resolves to 10\.1\.2\.3, a loopback, private/),
        allowEntry: '10.1.2.3',
        address: '10.1.2.3',
      },
      {
        kind: 'network.host',
        target: 'blocked.test:80',
        reason: 'blocked.test is on the deny list (blocked.test)',
        allowEntry: 'blocked.test',
        deniedBy: 'blocked.test',
      },
    ]);
    expect(await b.settle()).toEqual([]);
    // Allowed traffic through an entrance is no denial.
    expect(await exchange(at, `CONNECT api.test:${upstream.port} HTTP/1.1\r\n\r\n`)).toMatch(
      /^HTTP\/1\.1 200/,
    );
    expect((await a.settle()).length).toBe(4);
  });

  it('a refusal says why and what would allow it in its status line, which clients print', async () => {
    const upstream = await startUpstream();
    const proxy = await proxyFor(upstream, { allow: ['private.test'], deny: ['blocked.test'] });
    const at = proxy.address as { port: number };
    const line = async (request: string) => (await exchange(at, request)).split('\r\n')[0];
    expect(await line('CONNECT private.test:443 HTTP/1.1\r\n\r\n')).toMatch(
      /^HTTP\/1\.1 403 Forbidden by aleph-proxy: private\.test resolves to 10\.1\.2\.3, .*; allow with the allowlist entry "10\.1\.2\.3"$/,
    );
    expect(await line('GET http://evil.test/x HTTP/1.1\r\nHost: evil.test\r\n\r\n')).toBe(
      'HTTP/1.1 403 Forbidden by aleph-proxy: evil.test is not on the allowlist; allow with the allowlist entry "evil.test"',
    );
    expect(await line('CONNECT blocked.test:443 HTTP/1.0\r\n\r\n')).toBe(
      'HTTP/1.0 403 Forbidden by aleph-proxy: blocked.test is on the deny list (blocked.test); the deny list entry "blocked.test" refuses it',
    );
  });

  it('SOCKS5 refusals are typed too', async () => {
    const upstream = await startUpstream();
    const proxy = await proxyFor(upstream);
    const e = await proxy.openEntrance({});
    const agent = new SocksProxyAgent(`socks5h://127.0.0.1:${e.address?.port}`);
    const { default: http } = await import('node:http');
    await new Promise<void>((resolve) => {
      http.get('http://evil.test/', { agent }, () => resolve()).once('error', () => resolve());
    });
    expect(await e.settle()).toEqual([
      {
        kind: 'network.host',
        target: 'evil.test:80',
        reason: 'evil.test is not on the allowlist',
        allowEntry: 'evil.test',
      },
    ]);
  });

  it("records a resolver report only when the proxy's own allowlist refuses the name", async () => {
    const upstream = await startUpstream();
    const proxy = await proxyFor(upstream, {
      allow: ['*.corp.test', 'only.test:8443'],
      deny: ['bad.corp.test'],
    });
    const dir = mkdtempSync(path.join(os.tmpdir(), 'aleph-entrance-'));
    dirs.push(dir);
    const e = await proxy.openEntrance({ unixPath: path.join(dir, 'e.sock') });
    const sock = e.unixPath as string;
    for (const name of [
      'evil.test',
      'api.test',
      'x.corp.test',
      'only.test',
      'bad.corp.test',
      'not a name',
      'EVIL.test',
    ])
      await exchange(sock, `ALEPH dns-refused ${name}\r\n`);
    expect(await e.settle()).toEqual([
      {
        kind: 'network.dns',
        target: 'evil.test',
        reason: "evil.test is not on the allowlist: the sandbox's resolver answered NXDOMAIN",
        allowEntry: 'evil.test',
      },
      {
        kind: 'network.dns',
        target: 'bad.corp.test',
        reason: "bad.corp.test is on the deny list (bad.corp.test): the sandbox's resolver answered NXDOMAIN",
        allowEntry: 'bad.corp.test',
        deniedBy: 'bad.corp.test',
      },
    ]);
    // The proxy's own listeners take no reports; other requests starting with A still reach HTTP.
    expect(await exchange(sock, 'ACL http://api.test/ HTTP/1.1\r\nHost: api.test\r\n\r\n')).toMatch(
      /^HTTP\/1\.1 /,
    );
    await e.close();
  });

  it("records a refused transparent port as the proxy's allowlist decides it, addresses and names alike", async () => {
    const upstream = await startUpstream();
    const proxy = await proxyFor(upstream, { allow: ['10.1.2.3', '127.0.0.2:8080', '[::1]'], deny: [] });
    const dir = mkdtempSync(path.join(os.tmpdir(), 'aleph-entrance-'));
    dirs.push(dir);
    const e = await proxy.openEntrance({ unixPath: path.join(dir, 'e.sock') });
    const sock = e.unixPath as string;
    for (const target of [
      '10.1.2.3:5432',
      '127.0.0.2:22',
      '10.9.9.9:22',
      '[::1]:6379',
      'api.test:22',
      'junk',
    ])
      await exchange(sock, `ALEPH port-refused ${target}\r\n`);
    const denials = await e.settle();
    expect(denials.map((d) => [d.kind, d.target, d.allowEntry])).toEqual([
      ['network.port', '10.1.2.3:5432', '10.1.2.3:5432'],
      ['network.port', '127.0.0.2:22', '127.0.0.2:22'],
      ['network.host', '10.9.9.9:22', '10.9.9.9'],
      ['network.port', '[::1]:6379', '[::1]:6379'],
      ['network.port', 'api.test:22', 'api.test:22'],
    ]);
    expect(denials[0]?.reason).toBe(
      "10.1.2.3 is allowed, but port 5432 is not among the sandbox's transparent egress ports, so the connection was refused inside (a client using the proxy variables reaches it)",
    );
    expect(denials[1]?.reason).toBe('127.0.0.2 is allowed only on port 8080, not 22');
    await e.close();
  });

  it('records a refused UDP datagram as network.udp, allowed host or not, with what allows UDP and no allowlist entry', async () => {
    const upstream = await startUpstream();
    const proxy = await proxyFor(upstream, { allow: ['10.1.2.3', 'api.test'], deny: [] });
    const dir = mkdtempSync(path.join(os.tmpdir(), 'aleph-entrance-'));
    dirs.push(dir);
    const e = await proxy.openEntrance({ unixPath: path.join(dir, 'e.sock') });
    const sock = e.unixPath as string;
    for (const target of ['10.1.2.3:443', '10.9.9.9:53', '[::2]:4433', 'api.test:443', 'junk', '10.9.9.9'])
      await exchange(sock, `ALEPH udp-refused ${target}\r\n`);
    const denials = await e.settle();
    expect(denials.map((d) => [d.kind, d.target])).toEqual([
      ['network.udp', '10.1.2.3:443'],
      ['network.udp', '10.9.9.9:53'],
      ['network.udp', '[::2]:4433'],
      ['network.udp', 'api.test:443'],
    ]);
    expect(denials[0]?.reason).toBe(
      '10.1.2.3 is allowed, but only over TCP: the sandbox relays no UDP datagrams (DNS goes to its own resolver), so the datagram to port 443 was refused inside',
    );
    expect(denials[1]?.reason).toMatch(/^10\.9\.9\.9 is not on the allowlist: the sandbox relays no UDP/);
    for (const d of denials) expect(d.allowWith).toMatch(/^no allowlist entry allows UDP: .*--net all/);
    await e.close();
  });

  it('the pool gives each lease an entrance of its own, closed on release', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'aleph-entrance-'));
    dirs.push(dir);
    const pool = new ProxyPool({
      transport: { kind: 'unix', socketMode: 0o600 },
      resolver: createStaticResolver({}, false),
    });
    try {
      const one = await pool.acquire(['a.test'], { entrance: true });
      const two = await pool.acquire(['a.test'], { entrance: true });
      expect(one.proxy).toBe(two.proxy);
      const [e1, e2] = [one.entrance, two.entrance] as ProxyEntrance[];
      expect(e1?.unixPath).not.toBe(e2?.unixPath);
      await exchange(e1?.unixPath as string, 'CONNECT b.test:443 HTTP/1.1\r\n\r\n');
      expect((await e1?.settle())?.map((d) => d.target)).toEqual(['b.test:443']);
      expect(await e2?.settle()).toEqual([]);
      one.release();
      await new Promise((r) => setTimeout(r, 20));
      await expect(exchange(e1?.unixPath as string, 'x')).rejects.toThrow(/ENOENT|ECONNREFUSED/);
      two.release();
      expect((await pool.acquire(['a.test'])).entrance).toBeUndefined();
    } finally {
      await pool.dispose();
    }
  });
});

describe('findPrivateNames', () => {
  it('lists the allowed names the proxy would refuse, with the address entries that would allow them', async () => {
    const { findPrivateNames } = await import('../src/index.js');
    const resolver = createStaticResolver(
      { 'lan.test': ['10.1.2.3', '93.184.216.34'], 'pub.test': ['93.184.216.34'], 'ok.test': ['10.9.9.9'] },
      false,
    );
    expect(
      await findPrivateNames(
        ['lan.test', 'pub.test', 'ok.test:8443', '10.9.9.9', '*.wild.test', 'gone.test'],
        { resolver },
      ),
    ).toEqual([
      {
        entry: 'lan.test',
        name: 'lan.test',
        addresses: [{ address: '10.1.2.3', reason: expect.stringMatching(/private/) }],
        allowEntries: ['10.1.2.3'],
      },
    ]);
  });
});
