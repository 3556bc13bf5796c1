import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import type net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createStaticResolver, type ProxyServer, startProxy } from '../src/index.js';
import { eventually } from './helpers.js';

// git over an HTTPS proxy: git (through libcurl) opens a CONNECT tunnel to the proxy and speaks TLS to
// a local HTTPS server through it, verifying the server's certificate as it would on the internet.
const missing = [
  ['git', '--version'],
  ['openssl', 'version'],
]
  .filter(([tool, flag]) => spawnSync(tool as string, [flag as string]).status !== 0)
  .map(([tool]) => tool);
// Linux only: git for Windows and Apple's git may verify TLS through the system store (schannel,
// Secure Transport) rather than GIT_SSL_CAINFO, which this test's own certificate needs.
if (process.platform !== 'linux') missing.push(`linux (this is ${process.platform})`);
const reason = missing.length === 0 ? '' : ` [skipped: needs ${missing.join(' and ')}]`;

function run(cmd: string, args: string[], options: { cwd?: string; env?: NodeJS.ProcessEnv } = {}) {
  const r = spawnSync(cmd, args, { encoding: 'utf8', ...options });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

/** Runs git without blocking this process, which hosts the proxy and the server. */
function git(args: string[], env: NodeJS.ProcessEnv): Promise<{ status: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn('git', args, { env, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (c) => {
      stderr += c;
    });
    child.on('close', (status) => resolve({ status, stderr }));
  });
}

describe.skipIf(missing.length > 0)(`git clone over HTTPS through the proxy's CONNECT${reason}`, () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'aleph-proxy-git-'));
  const payload = randomBytes(256 * 1024).toString('base64');
  let server: https.Server;
  let port = 0;
  let connections = 0;
  let proxy: ProxyServer;
  let env: NodeJS.ProcessEnv;

  beforeAll(async () => {
    // A repository served the way a static web server would ("dumb" HTTP).
    const work = path.join(dir, 'work');
    mkdirSync(work);
    const quiet = { env: { ...process.env, GIT_CONFIG_NOSYSTEM: '1', HOME: dir } };
    run('git', ['init', '-q', '-b', 'main', work], quiet);
    writeFileSync(path.join(work, 'payload.txt'), payload);
    run('git', ['-C', work, 'add', 'payload.txt'], quiet);
    run(
      'git',
      [
        '-C',
        work,
        '-c',
        'user.name=t',
        '-c',
        'user.email=t@example.invalid',
        'commit',
        '-q',
        '-m',
        'payload',
      ],
      quiet,
    );
    run('git', ['clone', '-q', '--bare', work, path.join(dir, 'repo.git')], quiet);
    run('git', ['-C', path.join(dir, 'repo.git'), 'update-server-info'], quiet);

    // A certificate for git.test, which git verifies against it as its only CA.
    run('openssl', [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-days',
      '1',
      '-subj',
      '/CN=git.test',
      '-addext',
      'subjectAltName=DNS:git.test',
      '-keyout',
      path.join(dir, 'key.pem'),
      '-out',
      path.join(dir, 'cert.pem'),
    ]);
    server = https.createServer(
      { key: readFileSync(path.join(dir, 'key.pem')), cert: readFileSync(path.join(dir, 'cert.pem')) },
      (req, res) => {
        const file = path.join(
          dir,
          path.normalize(decodeURIComponent((req.url ?? '/').split('?')[0] as string)),
        );
        try {
          if (!file.startsWith(path.join(dir, 'repo.git'))) throw new Error('outside');
          const body = readFileSync(file);
          res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': body.length });
          res.end(body);
        } catch {
          res.writeHead(404);
          res.end();
        }
      },
    );
    server.on('connection', () => connections++);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as net.AddressInfo).port;

    // git.test resolves to loopback, which the proxy refuses for a name unless an IP entry allows it.
    proxy = await startProxy({
      allow: ['git.test', `127.0.0.1:${port}`],
      resolver: createStaticResolver({ 'git.test': ['127.0.0.1'], 'blocked.test': ['127.0.0.1'] }, false),
    });
    env = {
      PATH: process.env.PATH,
      HOME: dir,
      GIT_CONFIG_NOSYSTEM: '1',
      GIT_TERMINAL_PROMPT: '0',
      GIT_SSL_CAINFO: path.join(dir, 'cert.pem'),
      HTTPS_PROXY: `http://127.0.0.1:${(proxy.address as { port: number }).port}`,
    };
  });
  afterAll(async () => {
    await proxy?.close();
    await new Promise<void>((r) => (server ? server.close(() => r()) : r()));
    rmSync(dir, { recursive: true, force: true });
  });

  it('clones an allowed host, verifying its certificate, and the files arrive intact', async () => {
    const target = path.join(dir, 'clone');
    const r = await git(['clone', '-q', `https://git.test:${port}/repo.git`, target], env);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(readFileSync(path.join(target, 'payload.txt'), 'utf8')).toBe(payload);
    // Through the proxy: it allowed the tunnels and carried at least the payload down them. A tunnel's
    // bytes are counted when both its sides have closed, which the proxy may see after git has exited: wait.
    expect(await eventually(() => proxy.stats().openSockets === 0 && proxy.stats().activeTunnels === 0)).toBe(
      true,
    );
    const stats = proxy.stats();
    expect(stats.allowed).toBeGreaterThan(0);
    expect(stats.bytesDown).toBeGreaterThan(payload.length / 2);
  }, 30_000);

  it('is refused for a host off the list, and the server never sees a connection', async () => {
    const before = connections;
    const r = await git(
      ['clone', '-q', `https://blocked.test:${port}/repo.git`, path.join(dir, 'nope')],
      env,
    );
    expect(r.status).not.toBe(0);
    expect(r.stderr).toMatch(/403/);
    expect(connections).toBe(before);
  }, 30_000);
});
