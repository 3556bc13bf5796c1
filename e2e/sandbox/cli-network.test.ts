import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { linuxStack, REQUIRED, repoRoot, runAsync, tempDirs } from '../support.js';

/**
 * The network as the CLI user sees it: refusals printed on stderr after the command's own output, each
 * with what allows it, and in the audit record; `--publish` approved like any other capability, the dev
 * server reached from the host while the command runs; `profile` and `doctor` naming allowed names that
 * lead to a private address (localhost resolves to 127.0.0.1 through /etc/hosts, and the other entry is an
 * address, which is not looked up: no DNS query leaves the machine).
 */

const stack = linuxStack();
const cli = path.join(repoRoot, 'packages/sandbox/dist/cli-bundle/aleph-sandbox.cjs');
const tmp = tempDirs();

function cliRun(args: string[], home: string) {
  return runAsync(process.execPath, [cli, ...args], { env: { ...process.env, HOME: home } });
}

/** A home with a config file writing the audit log to `audit.jsonl` beside it, and `extra` TOML. */
function home(extra = ''): { home: string; audit: string; config: string } {
  const dir = tmp('aleph-cli-net-');
  const audit = path.join(dir, 'audit.jsonl');
  const config = path.join(dir, 'config.toml');
  writeFileSync(
    config,
    `[sandbox]\nworkspace_root = "${path.join(dir, 'ws')}"\n[sandbox.audit]\njsonl_path = "${audit}"\n${extra}`,
  );
  return { home: dir, audit, config };
}

async function freePort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address() as net.AddressInfo;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

function get(port: number): Promise<string> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    let got = '';
    s.on('connect', () => s.write('GET / HTTP/1.0\r\n\r\n'));
    s.on('data', (d) => {
      got += d.toString();
    });
    s.on('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? 'error'));
    s.on('close', () => resolve(got.split('\r\n\r\n')[1] ?? 'closed'));
  });
}

describe.skipIf(!stack.ok && !stack.missing.some((m) => REQUIRED.has(m)))(
  `aleph-sandbox and the network${stack.ok ? '' : ` [skipped: ${stack.reason}]`}`,
  () => {
    it("prints each refusal after the command's output, with what allows it, and audits it", async () => {
      const h = home();
      const r = await cliRun(
        [
          'run',
          '--config',
          h.config,
          '--net',
          'localhost',
          '--approve',
          'all',
          '--allow-spawn',
          '--',
          'sh',
          '-c',
          'getent hosts evil.test; curl -sS -o /dev/null -w "%{http_code}\\n" http://evil.test/; curl -sS -o /dev/null -w "%{http_code}\\n" --noproxy "" -x "$HTTP_PROXY" http://localhost:9/; echo own-output-ends',
        ],
        h.home,
      );
      expect(r.status).toBe(0);
      expect(r.stdout).toBe('403\n403\nown-output-ends\n');
      const lines = r.stderr.split('\n').filter((l) => l.startsWith('aleph-sandbox: '));
      expect(lines).toEqual([
        "aleph-sandbox: denied network.dns evil.test: evil.test is not on the allowlist: the sandbox's resolver answered NXDOMAIN",
        expect.stringMatching(
          /^aleph-sandbox: {3}to allow it: add "evil\.test" to the allowed hosts: aleph-sandbox run --net localhost,evil\.test /,
        ),
        'aleph-sandbox: denied network.host evil.test:80: evil.test is not on the allowlist',
        expect.stringMatching(/^aleph-sandbox: {3}to allow it: add "evil\.test" /),
        expect.stringMatching(
          /^aleph-sandbox: denied network\.private-address localhost:9: localhost resolves to 127\.0\.0\.1, /,
        ),
        expect.stringMatching(
          /^aleph-sandbox: {3}to allow it: add "127\.0\.0\.1" to the allowed hosts: aleph-sandbox run --net localhost,127\.0\.0\.1 /,
        ),
      ]);
      const record = readFileSync(h.audit, 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l))
        .find((l) => l.type === 'capability_ledger');
      expect(record.details.denials.map((d: { kind: string }) => d.kind)).toEqual([
        'network.dns',
        'network.host',
        'network.private-address',
      ]);
    }, 60_000);

    it('--json: an address entry is reached by a client that ignores the proxy variables, and each refusal on that path is a denial', async () => {
      const h = home();
      const server = net.createServer((s) => s.end('hello from 127.0.0.2'));
      await new Promise<void>((r) => server.listen(0, '127.0.0.2', r));
      const { port } = server.address() as net.AddressInfo;
      try {
        const script = `import socket
for host, port in (("127.0.0.2", ${port}), ("127.0.0.3", ${port}), ("10.1.2.3", 5432)):
    try:
        print(socket.create_connection((host, port), timeout=5).recv(100).decode() or "closed")
    except OSError as e:
        print(type(e).__name__)`;
        const r = await cliRun(
          [
            'run',
            '--config',
            h.config,
            '--json',
            '--net',
            `127.0.0.2:${port},10.1.2.3`,
            '--approve',
            'all',
            '--',
            'python3',
            '-c',
            script,
          ],
          h.home,
        );
        const out = JSON.parse(r.stdout) as {
          stdout: string;
          details: { denials: { kind: string; target: string; allowWith: string }[] };
        };
        expect(out.stdout).toBe('hello from 127.0.0.2\nConnectionResetError\nConnectionRefusedError\n');
        expect(out.details.denials.map((d) => [d.kind, d.target])).toEqual([
          ['network.host', `127.0.0.3:${port}`],
          ['network.port', '10.1.2.3:5432'],
        ]);
        expect(out.details.denials[1]?.allowWith).toMatch(
          /^add "10\.1\.2\.3:5432" to the allowed hosts: aleph-sandbox run --net /,
        );
      } finally {
        await new Promise<void>((r) => server.close(() => r()));
      }
    }, 60_000);

    it('--publish is granted by the flag like any other capability flag, and a bad port is a usage error', async () => {
      const h = home();
      const granted = await cliRun(
        ['run', '--config', h.config, '--publish', '3999', '--approve', 'none', '--', 'true'],
        h.home,
      );
      expect(granted.status, granted.stderr).toBe(0);
      const bad = await cliRun(['run', '--config', h.config, '--publish', '70000', '--', 'true'], h.home);
      expect(bad.status).toBe(2);
      expect(bad.stderr).toMatch(/--publish "70000" must be a port from 1 to 65535/);
    }, 60_000);

    it('--publish: a dev server inside answers on the host while the command runs, and not after; [sandbox.network] publish approves it', async () => {
      const port = await freePort();
      const h = home(`[sandbox.network]\npublish = [${port}]\n`);
      const ws = path.join(h.home, 'published-ws');
      const server = `import http.server, os, threading, time
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.send_header("content-length", "9"); self.end_headers(); self.wfile.write(b"published")
    def log_message(self, *a): pass
s = http.server.ThreadingHTTPServer(("127.0.0.1", ${port}), H)
threading.Thread(target=s.serve_forever, daemon=True).start()
while not os.path.exists("stop"): time.sleep(0.05)`;
      const child: ChildProcessWithoutNullStreams = spawn(
        process.execPath,
        [
          cli,
          'run',
          '--config',
          h.config,
          '--workspace',
          ws,
          '--publish',
          String(port),
          '--approve',
          'none',
          '--',
          'python3',
          '-c',
          server,
        ],
        { env: { ...process.env, HOME: h.home } },
      );
      child.stdin.end();
      let stderr = '';
      child.stderr.on('data', (d) => {
        stderr += d.toString();
      });
      const exited = new Promise<number | null>((r) => child.once('close', (code) => r(code)));
      let body = '';
      for (let i = 0; i < 600 && body !== 'published'; i++) {
        body = await get(port);
        if (body !== 'published') await sleep(100);
      }
      expect(body, stderr).toBe('published');
      writeFileSync(path.join(ws, 'stop'), '');
      expect(await exited).toBe(0);
      expect(await get(port)).toBe('ECONNREFUSED');
    }, 90_000);

    it('profile and doctor name the allowed names that resolve to a private address, and the --net that allows them', async () => {
      const h = home('[sandbox.network]\nallow = ["localhost"]\n');
      const profile = await cliRun(
        ['profile', '--config', h.config, '--net', 'localhost,203.0.113.7', '--', 'true'],
        h.home,
      );
      expect(profile.status).toBe(0);
      expect(profile.stdout).toMatch(
        /private: localhost resolves to 127\.0\.0\.1 \(a loopback, .*\): the proxy refuses it unless the address is allowed too: --net (203\.0\.113\.7,localhost|localhost,203\.0\.113\.7),127\.0\.0\.1 /,
      );
      const json = await cliRun(
        ['profile', '--config', h.config, '--json', '--net', 'localhost', '--', 'true'],
        h.home,
      );
      expect(JSON.parse(json.stdout).privateNames).toMatchObject([
        { entry: 'localhost', allowEntries: ['127.0.0.1'] },
      ]);
      const doctor = await cliRun(['doctor', '--config', h.config], h.home);
      expect(doctor.stdout).toMatch(
        /^private: localhost resolves to 127\.0\.0\.1 .* --net localhost,127\.0\.0\.1 /m,
      );
    }, 120_000);
  },
);
