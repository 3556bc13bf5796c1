import { describe, expect, it, onTestFinished } from 'vitest';
import { startProxy } from '../src/index.js';

async function proxy(allow: string[]) {
  const p = await startProxy({ allow });
  onTestFinished(() => p.close());
  return p;
}

describe('env()', () => {
  it('points every proxy variable, in both cases, at the proxy or at the address given', async () => {
    const p = await proxy(['api.example.com']);
    const port = p.address?.port;
    expect(p.env()).toEqual({
      HTTP_PROXY: `http://127.0.0.1:${port}`,
      http_proxy: `http://127.0.0.1:${port}`,
      HTTPS_PROXY: `http://127.0.0.1:${port}`,
      https_proxy: `http://127.0.0.1:${port}`,
      ALL_PROXY: `socks5h://127.0.0.1:${port}`,
      all_proxy: `socks5h://127.0.0.1:${port}`,
      NO_PROXY: 'localhost,127.0.0.1,::1',
      no_proxy: 'localhost,127.0.0.1,::1',
    });
    expect(p.env({ host: '127.0.0.1', port: 3128 }).https_proxy).toBe('http://127.0.0.1:3128');
    expect(p.env({ host: '::1', port: 3128 }).ALL_PROXY).toBe('socks5h://[::1]:3128');
  });

  it('leaves out of NO_PROXY the loopback the allowlist names: that one is the host’s, via the proxy', async () => {
    expect((await proxy(['127.0.0.1:8080'])).env().NO_PROXY).toBe('::1');
    expect((await proxy(['127.0.0.2'])).env().no_proxy).toBe('::1');
    expect((await proxy(['[::1]:8080'])).env().NO_PROXY).toBe('127.0.0.1');
    expect((await proxy(['127.0.0.1', '::1'])).env().NO_PROXY).toBe('');
    // A name or another address changes nothing.
    expect((await proxy(['localhost', '10.0.0.1'])).env().NO_PROXY).toBe('localhost,127.0.0.1,::1');
    // A range that covers loopback names it as explicitly as an address; one that does not, not at all.
    expect((await proxy(['127.0.0.0/8'])).env().NO_PROXY).toBe('::1');
    expect((await proxy(['::/96'])).env().NO_PROXY).toBe('127.0.0.1');
    expect((await proxy(['10.0.0.0/8', '2001:db8::/32'])).env().NO_PROXY).toBe('localhost,127.0.0.1,::1');
  });
});
