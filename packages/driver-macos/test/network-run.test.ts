import net from 'node:net';
import { createStaticResolver } from '@aleph/proxy';
import { ProxyPool } from '@aleph/proxy/pool';
import { afterEach, describe, expect, it } from 'vitest';
import { openRunNetwork } from '../src/network-run.js';
import { probeMacos } from '../src/probe.js';

const pools: ProxyPool[] = [];
afterEach(async () => {
  for (const p of pools.splice(0)) await p.dispose();
});

function pool(): ProxyPool {
  const p = new ProxyPool({
    transport: { kind: 'loopback' },
    resolver: createStaticResolver({ 'lan.test': ['10.1.2.3'] }, false),
  });
  pools.push(p);
  return p;
}

/** What the proxy answers to `request` on 127.0.0.1:port (first line). */
function ask(port: number, request: string): Promise<string> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    let got = '';
    s.on('connect', () => s.write(request));
    s.on('data', (d) => {
      got += d.toString();
    });
    s.on('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? 'error'));
    s.on('close', () => resolve(got.split('\r\n')[0] ?? ''));
  });
}

describe('an allowHosts run on macOS: its own entrance, its refusals typed', () => {
  it('names its own port in the proxy variables and reports what the proxy refused it', async () => {
    const p = pool();
    const run = await openRunNetwork(p, ['lan.test', 'api.test']);
    const other = await openRunNetwork(p, ['lan.test', 'api.test']);
    expect(run.port).not.toBe(other.port);
    expect(run.env.HTTPS_PROXY).toBe(`http://127.0.0.1:${run.port}`);
    expect(run.env.ALL_PROXY).toBe(`socks5h://127.0.0.1:${run.port}`);
    expect(await ask(run.port, 'CONNECT evil.test:443 HTTP/1.1\r\n\r\n')).toMatch(
      /^HTTP\/1\.1 403 Forbidden by aleph-proxy/,
    );
    expect(await ask(run.port, 'CONNECT lan.test:443 HTTP/1.1\r\n\r\n')).toMatch(/resolves to 10\.1\.2\.3/);
    expect(await run.denials()).toEqual([
      {
        kind: 'network.host',
        target: 'evil.test:443',
        reason: 'evil.test is not on the allowlist',
        allowWith: expect.stringMatching(
          /^add "evil\.test" to the allowed hosts: aleph-sandbox run --net lan\.test,api\.test,evil\.test /,
        ),
      },
      {
        kind: 'network.private-address',
        target: 'lan.test:443',
        reason: expect.stringMatching(/^lan\.test resolves to 10\.1\.2\.3, /),
        allowWith: expect.stringMatching(
          /^add "10\.1\.2\.3" to the allowed hosts: aleph-sandbox run --net lan\.test,api\.test,10\.1\.2\.3 /,
        ),
      },
    ]);
    expect(await other.denials()).toEqual([]);
    run.release();
    other.release();
    await new Promise((r) => setTimeout(r, 20));
    expect(await ask(run.port, 'x')).toBe('ECONNREFUSED');
  });

  it('the probe declares what transparent egress cannot do there', () => {
    const probe = probeMacos({ sandboxExecPath: '/nonexistent/sandbox-exec', platform: 'darwin' });
    expect(probe.notEnforced).toEqual([
      expect.stringMatching(/^transparent-egress: Seatbelt gives a command no network of its own/),
    ]);
  });
});
