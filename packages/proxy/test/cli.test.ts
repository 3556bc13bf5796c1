import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it, onTestFinished } from 'vitest';
import { rawConnect, readUntilClose, startUpstream } from './helpers.js';

const cli = fileURLToPath(new URL('../dist/cli.js', import.meta.url));
function requireBuilt(): void {
  if (!existsSync(cli)) throw new Error(`${cli} is missing: run \`pnpm build\` first (pnpm test does)`);
}

async function launch(args: string[]): Promise<{ child: ChildProcess; ready: Record<string, unknown> }> {
  requireBuilt();
  const child = spawn(process.execPath, [cli, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  const ready = await new Promise<Record<string, unknown>>((resolve, reject) => {
    let out = '';
    child.stdout?.on('data', (c) => {
      out += c;
      const nl = out.indexOf('\n');
      if (nl >= 0) resolve(JSON.parse(out.slice(0, nl)));
    });
    child.once('exit', (code) => reject(new Error(`exited ${code}`)));
  });
  return { child, ready };
}

const exited = (child: ChildProcess) =>
  new Promise<number | null>((r) => child.once('exit', (code) => r(code)));

describe('aleph-proxy CLI', () => {
  it.skipIf(process.platform === 'win32')(
    'prints one JSON line when ready, serves, and exits 0 on SIGTERM removing its socket [POSIX: Unix socket and SIGTERM]',
    async () => {
      const upstream = await startUpstream();
      const sockDir = mkdtempSync(path.join(os.tmpdir(), 'aleph-proxy-cli-'));
      onTestFinished(() => rmSync(sockDir, { recursive: true, force: true }));
      const unix = path.join(sockDir, 'p.sock');
      const { child, ready } = await launch([
        '--allow',
        'api.test',
        '--allow',
        `127.0.0.1:${upstream.port}`,
        '--deny',
        'bad.api.test',
        '--resolve',
        'api.test=127.0.0.1',
        '--unix',
        unix,
      ]);
      expect(ready.listen).toMatch(/^127\.0\.0\.1:\d+$/);
      expect(ready.unix).toBe(unix);
      const port = Number(String(ready.listen).split(':')[1]);
      const s = await rawConnect(port);
      s.write(`GET http://api.test:${upstream.port}/cli HTTP/1.0\r\n\r\n`);
      expect((await readUntilClose(s)).toString()).toContain('upstream saw GET /cli');
      const viaUnix = net.connect(unix);
      viaUnix.write(`CONNECT evil.test:443 HTTP/1.1\r\n\r\n`);
      expect((await readUntilClose(viaUnix)).toString()).toMatch(/^HTTP\/1\.1 403/);
      const code = exited(child);
      child.kill('SIGTERM');
      expect(await code).toBe(0);
      expect(existsSync(unix)).toBe(false);
    },
  );

  it.skipIf(process.platform === 'win32')(
    'exits 0 on a SIGTERM sent the moment the ready line arrives (20 times over) [POSIX: SIGTERM]',
    async () => {
      requireBuilt();
      const codes: (number | string | null)[] = [];
      for (let i = 0; i < 20; i++) {
        const child = spawn(process.execPath, [cli, '--allow', 'api.test'], {
          stdio: ['ignore', 'pipe', 'ignore'],
        });
        await new Promise((resolve) => child.stdout?.once('data', resolve));
        const closed = new Promise<number | string | null>((resolve) =>
          child.once('close', (code, signal) => resolve(code ?? signal)),
        );
        child.kill('SIGTERM');
        codes.push(await closed);
      }
      expect(codes).toEqual(Array(20).fill(0));
    },
  );

  it.skipIf(process.platform === 'win32')(
    'warns on stderr when it listens beyond loopback, and not when it does not [POSIX: SIGTERM]',
    async () => {
      for (const [listen, warned] of [
        ['0.0.0.0:0', true],
        ['127.0.0.1:0', false],
      ] as const) {
        requireBuilt();
        const child = spawn(process.execPath, [cli, '--allow', 'api.test', '--listen', listen], {
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        let stderr = '';
        child.stderr?.on('data', (c) => {
          stderr += c;
        });
        await new Promise((resolve) => child.stdout?.once('data', resolve));
        // 'close', not 'exit': stderr is read to its end first.
        const code = new Promise((resolve) => child.once('close', resolve));
        child.kill('SIGTERM');
        expect(await code).toBe(0);
        if (warned)
          expect(stderr).toMatch(/warning: listening on 0\.0\.0\.0, not loopback: anyone who can reach/);
        else expect(stderr).toBe('');
      }
    },
  );

  it.skipIf(process.platform === 'win32')(
    'a Unix socket path in a missing directory is named with the fix [POSIX: Unix socket]',
    () => {
      requireBuilt();
      const missing = path.join(os.tmpdir(), `aleph-no-such-dir-${process.pid}`, 'p.sock');
      const r = spawnSync(process.execPath, [cli, '--allow', 'api.test', '--unix', missing], {
        encoding: 'utf8',
      });
      expect(r.status).toBe(1);
      expect(r.stderr).toContain(`the directory ${path.dirname(missing)} does not exist; create it`);
    },
  );

  it.each([
    [['--allow', 'http://x.com'], /pattern "http:\/\/x\.com" must be a host\[:port\], not a URL/],
    [['--allow', 'a.*.com'], /pattern "a\.\*\.com" may only use \*/],
    [['--deny', 'x.com:70000'], /pattern "x\.com:70000" has a bad port/],
    [['--listen', 'nowhere'], /--listen "nowhere" must be HOST:PORT/],
    [['--resolve', 'api.test'], /--resolve "api\.test" must be NAME=IP/],
    [['--resolve', 'api.test=not-an-ip'], /not an IP address/],
    [
      ['--parent', 'socks5://proxy.corp:1080'],
      /--parent: parent proxy "socks5:\/\/proxy\.corp:1080": only an http:\/\/ proxy/,
    ],
    [['--parent', 'proxy.corp'], /--parent: parent proxy "proxy\.corp" must be HOST:PORT/],
    [['--bogus'], /Unknown option/],
    [['--allow', '10.0.0.0/33'], /pattern "10\.0\.0\.0\/33" has a prefix length above 32/],
  ])('usage error %j exits 2 naming the problem', (args, message) => {
    requireBuilt();
    const r = spawnSync(process.execPath, [cli, ...args], { encoding: 'utf8' });
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(message);
  });

  it('--help names CIDR patterns and that a CIDR allow lets a private range through', () => {
    requireBuilt();
    const r = spawnSync(process.execPath, [cli, '--help'], { encoding: 'utf8' });
    expect(r.status).toBe(0);
    expect(r.stdout).toContain('10.0.0.0/8');
    expect(r.stdout).toMatch(/CIDR --allow\s+covers them: --allow 10\.0\.0\.0\/8 is the explicit permission/);
  });
});
