import { existsSync, lstatSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ProxyPool } from '../src/pool.js';
import { createStaticResolver } from '../src/resolver.js';

const pools: ProxyPool[] = [];
afterEach(async () => {
  for (const p of pools.splice(0)) await p.dispose();
});
function pool(options: Partial<ConstructorParameters<typeof ProxyPool>[0]> = {}): ProxyPool {
  const p = new ProxyPool({
    transport: { kind: 'loopback' },
    resolver: createStaticResolver({}, false),
    ...options,
  });
  pools.push(p);
  return p;
}

/** True when something accepts TCP connections on 127.0.0.1:port. */
function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}

describe('ProxyPool', () => {
  it('loopback: one proxy per allowlist, shared whatever the order of the hosts', async () => {
    const p = pool();
    const a = await p.acquire(['a.test', 'b.test']);
    const b = await p.acquire(['b.test', 'a.test']);
    const c = await p.acquire(['c.test']);
    expect(a.proxy).toBe(b.proxy);
    expect(c.proxy).not.toBe(a.proxy);
    expect(a.proxy.address?.host).toBe('127.0.0.1');
    expect(a.proxy.unixPath).toBeUndefined();
    expect(a.proxy.allowlist.decide({ kind: 'name', host: 'a.test', port: 443 }).allowed).toBe(true);
    expect(a.proxy.allowlist.decide({ kind: 'name', host: 'c.test', port: 443 }).allowed).toBe(false);
    for (const l of [a, b, c]) l.release();
  });

  it('closes a proxy once nobody has used it for idleMs, and starts a fresh one after', async () => {
    const p = pool({ idleMs: 50 });
    const first = await p.acquire(['a.test']);
    const port = first.proxy.address?.port as number;
    first.release();
    first.release(); // idempotent: must not count twice
    let closed = false;
    const end = Date.now() + 3000;
    while (!closed && Date.now() < end) {
      await new Promise((r) => setTimeout(r, 25));
      closed = !(await listening(port));
    }
    expect(closed).toBe(true);
    const second = await p.acquire(['a.test']);
    expect(second.proxy).not.toBe(first.proxy);
    expect(await listening(second.proxy.address?.port as number)).toBe(true);
    second.release();
  });

  it('keeps a proxy open while any lease holds it', async () => {
    const p = pool({ idleMs: 20 });
    const a = await p.acquire(['a.test']);
    const b = await p.acquire(['a.test']);
    a.release();
    a.release(); // a second release of the same lease must not drop b's hold
    await new Promise((r) => setTimeout(r, 120));
    expect(await listening(b.proxy.address?.port as number)).toBe(true);
    b.release();
  });

  it('unix: stable socket paths in a private directory, removed on dispose', async () => {
    const p = pool({ transport: { kind: 'unix', socketMode: 0o600 } });
    const where = p.socketPath(['a.test']);
    expect(p.socketPath(['a.test'])).toBe(where);
    expect(lstatSync(path.dirname(where)).mode & 0o777).toBe(0o700);
    const lease = await p.acquire(['a.test']);
    expect(lease.proxy.unixPath).toBe(where);
    expect(lease.proxy.address).toBeNull();
    expect(lstatSync(where).isSocket()).toBe(true);
    expect(lstatSync(where).mode & 0o777).toBe(0o600);
    lease.release();
    await p.dispose();
    expect(existsSync(where)).toBe(false);
    expect(existsSync(path.dirname(where))).toBe(false);
  });

  it('loopback has no socket path to offer', () => {
    expect(() => pool().socketPath(['a.test'])).toThrow(/unix transport/);
  });

  it('a proxy that fails to start is not cached: the next acquire tries again', async () => {
    const p = pool();
    await expect(p.acquire(['bad pattern with spaces'])).rejects.toThrow();
    await expect(p.acquire(['bad pattern with spaces'])).rejects.toThrow();
    const ok = await p.acquire(['a.test']);
    ok.release();
  });

  it('dispose closes every proxy, leased or idle', async () => {
    const p = pool();
    const a = await p.acquire(['a.test']);
    const b = await p.acquire(['b.test']);
    b.release();
    await p.dispose();
    expect(await listening(a.proxy.address?.port as number)).toBe(false);
    expect(await listening(b.proxy.address?.port as number)).toBe(false);
  });
});
