import { chmodSync, chownSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { sessionKeyToFilename } from '@aleph/sandbox-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { linuxStack, REQUIRED, requiredButMissing, runHarness } from '../support.js';
import { identities as allIdentities, type Identity } from './hosts.js';

/**
 * Published ports in the real sandbox: a dev server inside (Python's http.server) reached from the host's
 * 127.0.0.1 while the run lasts and not after, again by the session's next run, then by another session's;
 * two sessions publishing one port at once (the second refused, saying why); the host's other addresses
 * never reach it, and a run of another session cannot reach it either. As root (the fork server lends the
 * session's kept namespace; and without the fork server, bwrap makes one), as an unprivileged uid, and in
 * tier 3, which refuses to publish.
 */

const stack = linuxStack();
const found = allIdentities().filter((i) => i.skip === undefined);
const variants: (Identity & { driver: Record<string, unknown>; label: string })[] = [
  ...found
    .filter((i) => i.key === 'root' || i.key === 'unprivileged')
    .map((i) => ({ ...i, driver: {}, label: i.name })),
  ...found
    .filter((i) => i.key === 'root')
    .map((i) => ({ ...i, driver: { forkServer: false }, label: `${i.name}, no fork server` })),
];
const tier3 = found.find((i) => i.tier === 'direct');

interface StepResult {
  id: string;
  exitCode?: number | null;
  stdout?: string;
  stderr?: string;
  error?: { code: string; message: string };
}

/** A dev server on 127.0.0.1:PORT answering BODY, until the files STOP appear in its cwd. */
const serve = (port: number, body: string, ...stop: string[]) => ({
  program: 'python3',
  args: [
    '-c',
    `import http.server, os, threading, time
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        b = ${JSON.stringify(body)}.encode()
        self.send_response(200); self.send_header("content-length", str(len(b))); self.end_headers(); self.wfile.write(b)
    def log_message(self, *a): pass
s = http.server.ThreadingHTTPServer(("127.0.0.1", ${port}), H)
threading.Thread(target=s.serve_forever, daemon=True).start()
open("ready-${body}", "w").close()
while not all(os.path.exists(f) for f in ${JSON.stringify(stop)}): time.sleep(0.05)
print("served")`,
  ],
  capabilities: { publishPorts: [port], spawnSubprocess: true },
});

/** GET http://HOST:PORT/ once: its body, or the error code. */
function get(port: number, host = '127.0.0.1'): Promise<string> {
  return new Promise((resolve) => {
    const s = net.connect(port, host);
    let got = '';
    s.setTimeout(3000, () => s.destroy(new Error('ETIMEDOUT')));
    s.on('connect', () => s.write(`GET / HTTP/1.0\r\nHost: x\r\n\r\n`));
    s.on('data', (d) => {
      got += d.toString();
    });
    s.on('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? e.message));
    s.on('close', () => resolve(got.split('\r\n\r\n')[1] ?? (got === '' ? 'closed' : got)));
  });
}

/** Asks until the body is `body` (the server inside may not listen yet), a minute at most. */
async function reach(port: number, body: string): Promise<string> {
  let last = '';
  for (let i = 0; i < 600 && last !== body; i++) {
    last = await get(port);
    if (last !== body) await sleep(100);
  }
  return last;
}

/** A free port of the host's loopback (and so, for these tests, a port nothing publishes yet). */
async function freePort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address() as net.AddressInfo;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

const otherAddress = Object.values(os.networkInterfaces())
  .flat()
  .find((a) => a !== undefined && a.family === 'IPv4' && !a.internal)?.address;

describe.skipIf(!stack.ok && !stack.missing.some((m) => REQUIRED.has(m)))(
  `published ports${stack.ok ? '' : ` [skipped: ${stack.reason}]`}`,
  () => {
    requiredButMissing(stack);
    let base = '';
    beforeAll(() => {
      base = mkdtempSync(path.join(os.tmpdir(), 'aleph-e2e-publish-'));
      chmodSync(base, 0o755);
    });
    afterAll(() => {
      if (base !== '') rmSync(base, { recursive: true, force: true });
    });

    /** Runs `plan`'s steps as `identity` with a workspace root of its own; the workspace of a session. */
    const harness = (identity: (typeof variants)[number] | Identity, name: string) => {
      const home = path.join(base, name);
      const workspaceRoot = path.join(home, 'workspaces');
      mkdirSync(workspaceRoot, { recursive: true, mode: 0o755 });
      if (identity.uid !== process.getuid?.()) {
        chownSync(home, identity.uid, identity.uid);
        chownSync(workspaceRoot, identity.uid, identity.uid);
      }
      const ws = (session: string) => path.join(workspaceRoot, sessionKeyToFilename(session));
      const run = (steps: unknown[], options: { parallel?: boolean; stopFile?: string } = {}) =>
        runHarness<StepResult>(
          { workspaceRoot, ...options, driver: 'driver' in identity ? identity.driver : {}, steps },
          { ...process.env, HOME: home },
          { uid: identity.uid, mountpoint: path.join(base, name, 'repo'), wrap: identity.wrap },
        );
      return { ws, run };
    };

    describe.each(variants)('as $label', (identity) => {
      it('a dev server inside is reached on the host loopback while the run lasts, by the next run of the session and by another session, and not after', async () => {
        const port = await freePort();
        const { ws, run } = harness(identity, `seq-${identity.key}-${variants.indexOf(identity)}`);
        const ran = run([
          { id: 'first', session: 'a', command: serve(port, 'first', 'stop-1') },
          { id: 'again', session: 'a', command: serve(port, 'again', 'stop-2') },
          { id: 'other', session: 'b', command: serve(port, 'other', 'stop-3') },
        ]);
        const seen: string[] = [];
        for (const [session, body, stop] of [
          ['a', 'first', 'stop-1'],
          ['a', 'again', 'stop-2'],
          ['b', 'other', 'stop-3'],
        ] as const) {
          seen.push(await reach(port, body));
          if (body === 'first' && otherAddress !== undefined) seen.push(await get(port, otherAddress));
          writeFileSync(path.join(ws(session), stop), '');
        }
        const results = (await ran).results;
        expect(seen).toEqual([
          'first',
          ...(otherAddress === undefined ? [] : ['ECONNREFUSED']),
          'again',
          'other',
        ]);
        for (const id of ['first', 'again', 'other']) {
          expect(results.get(id)?.error, id).toBeUndefined();
          expect(results.get(id)?.stdout, id).toBe('served\n');
        }
        expect(await get(port)).toBe('ECONNREFUSED');
      }, 120_000);

      it('a second session publishing the same port at once is refused, saying why; a third cannot reach it from inside', async () => {
        const port = await freePort();
        const { ws, run } = harness(identity, `par-${identity.key}-${variants.indexOf(identity)}`);
        const ready = path.join(ws('a'), 'ready-holder');
        // The holder serves until the host has reached it and the harness says the other two are done.
        const ran = run(
          [
            {
              id: 'holder',
              session: 'a',
              background: true,
              command: serve(port, 'holder', 'seen', 'others-done'),
            },
            {
              id: 'clash',
              session: 'b',
              waitFor: ready,
              command: { program: 'true', capabilities: { publishPorts: [port] } },
            },
            {
              id: 'peek',
              session: 'c',
              waitFor: ready,
              command: {
                program: 'python3',
                args: [
                  '-c',
                  `import socket\ntry:\n    socket.create_connection(("127.0.0.1", ${port}), timeout=3); print("reached")\nexcept OSError:\n    print("refused")`,
                ],
              },
            },
          ],
          { parallel: true, stopFile: path.join(ws('a'), 'others-done') },
        );
        expect(await reach(port, 'holder')).toBe('holder');
        writeFileSync(path.join(ws('a'), 'seen'), '');
        const results = (await ran).results;
        expect(results.get('holder')?.stdout).toBe('served\n');
        expect(results.get('clash')?.error?.code).toBe('ALEPH_DRIVER_FAILED');
        expect(results.get('clash')?.error?.message).toMatch(
          new RegExp(
            `--publish ${port}: cannot listen on the host's 127\\.0\\.0\\.1:${port}: Address already in use \\(another run publishing it`,
          ),
        );
        expect(results.get('peek')?.stdout).toBe('refused\n');
      }, 120_000);
    });

    it.skipIf(tier3 === undefined)(
      `tier 3 (no namespaces) refuses to publish, saying why${tier3 === undefined ? ' [skipped: no tier 3 host can be simulated here]' : ''}`,
      async () => {
        const { run } = harness(tier3 as Identity, 'tier3');
        const results = (
          await run([{ id: 't3', command: { program: 'true', capabilities: { publishPorts: [3999] } } }])
        ).results;
        expect(results.get('t3')?.error?.code).toBe('ALEPH_CAPABILITY_UNSUPPORTED');
        expect(results.get('t3')?.error?.message).toMatch(
          /publishing port 3999 needs a network namespace of the command's own/,
        );
      },
      120_000,
    );
  },
);
