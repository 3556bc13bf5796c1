import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sessionKeyToFilename } from '@aleph/sandbox-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { harnessResults, linuxStack, REQUIRED, requiredButMissing } from '../support.js';

/**
 * The network namespaces of a root host's runs (native/linux/spawner/netpool.c): the fork server keeps a
 * session's namespace between its runs instead of bwrap making and tearing down one per run. What a
 * careful user relies on still holds, each tried from inside the sandbox:
 *   - nothing of a run is left in it for the next run: no listener, and no port held in TIME_WAIT;
 *   - a run cannot change the namespace's settings for the runs after it;
 *   - another session, and another run of the same session at the same time, cannot reach a run's
 *     loopback services;
 *   - an allowHosts run's bridge port is gone for the session's next run, which has no network.
 */

const stack = linuxStack();
const root = process.getuid?.() === 0;
const spawnOk = { spawnSubprocess: true };
const py = (code: string, extra: Record<string, unknown> = {}) => ({
  program: 'python3',
  args: ['-c', code],
  capabilities: spawnOk,
  ...extra,
});
const sh = (script: string, capabilities: Record<string, unknown> = spawnOk) => ({
  program: 'sh',
  args: ['-c', script],
  capabilities,
});
const NETNS = 'import os; print("netns", os.readlink("/proc/self/ns/net"))';

// A server without SO_REUSEADDR that closes its side first (so its port goes to TIME_WAIT), and its client.
const SERVE_AND_CLOSE = `
import socket
s = socket.socket(); s.bind(("127.0.0.1", 48123)); s.listen()
c = socket.create_connection(("127.0.0.1", 48123)); a, _ = s.accept()
a.sendall(b"x"); a.close(); c.recv(1); c.close(); s.close()
print("served")
`;
const REBIND = `
import socket
s = socket.socket()
try:
    s.bind(("127.0.0.1", 48123)); print("bound")
except OSError as e:
    print("bind failed", e.errno)
`;
const connectTo = (port: string) => `
import socket
try:
    socket.create_connection(("127.0.0.1", ${port}), timeout=2); print("connected")
except OSError as e:
    print("refused", e.errno)
`;

interface StepResult {
  id: string;
  exitCode?: number | null;
  stdout?: string;
  stderr?: string;
  error?: { code: string; message: string };
}

describe.runIf(stack.ok || REQUIRED.size > 0)(
  `network namespaces kept per session${stack.ok ? '' : ` [skipped: ${stack.reason}]`}${root ? '' : ' [skipped: only a root host keeps them in its fork server; elsewhere bwrap makes one per run]'}`,
  () => {
    if (requiredButMissing(stack)) return;
    if (!root) return;
    let base = '';
    let serial = new Map<string, StepResult>();
    let parallel = new Map<string, StepResult>();
    const harness = (plan: unknown) => harnessResults<StepResult>(plan, base);
    const out = (results: Map<string, StepResult>, id: string) => {
      const r = results.get(id);
      expect(r?.error, JSON.stringify(r)).toBeUndefined();
      expect(r?.exitCode, JSON.stringify(r)).toBe(0);
      return r?.stdout ?? '';
    };

    beforeAll(async () => {
      base = mkdtempSync(path.join(os.tmpdir(), 'aleph-e2e-netns-'));
      const workspaceRoot = path.join(base, 'workspaces');
      serial = await harness({
        workspaceRoot,
        steps: [
          { id: 'a-first', session: 'a', command: py(NETNS) },
          { id: 'a-serve', session: 'a', command: py(SERVE_AND_CLOSE) },
          { id: 'a-rebind', session: 'a', command: py(REBIND) },
          {
            id: 'a-leave-listener',
            session: 'a',
            command: sh(
              'setsid python3 -c \'import socket,time; s=socket.socket(); s.bind(("127.0.0.1",48124)); s.listen(); time.sleep(30)\' </dev/null >/dev/null 2>&1 & sleep 0.5; echo left',
            ),
          },
          { id: 'a-after-listener', session: 'a', command: py(connectTo('48124')) },
          {
            id: 'a-change-settings',
            session: 'a',
            command: sh(
              'echo 100000 > /proc/sys/net/ipv4/tcp_max_tw_buckets && echo sysctl-written; python3 -c \'import socket,fcntl,struct; s=socket.socket(); fcntl.ioctl(s, 0x8914, struct.pack("16sH", b"lo", 0)); print("lo-down")\' 2>/dev/null || echo lo-kept',
            ),
          },
          {
            id: 'a-after-settings',
            session: 'a',
            command: py(
              `print(open("/proc/sys/net/ipv4/tcp_max_tw_buckets").read().strip()); ${SERVE_AND_CLOSE.trim().split('\n').join('; ')}`,
            ),
          },
          { id: 'a-last', session: 'a', command: py(NETNS) },
          { id: 'b-first', session: 'b', command: py(NETNS) },
          {
            id: 'c-proxied',
            session: 'c',
            command: sh('echo "$HTTPS_PROXY" > proxy.txt; echo "$HTTPS_PROXY"', {
              network: { kind: 'allowHosts', hosts: ['pypi.org'] },
            }),
          },
          {
            id: 'c-none-after',
            session: 'c',
            command: py(
              'import re, socket\nport = re.search(r":(\\d+)", open("proxy.txt").read()).group(1)\ntry:\n    s = socket.create_connection(("127.0.0.1", int(port)), timeout=2)\n    s.sendall(b"CONNECT pypi.org:443 HTTP/1.1\\r\\nHost: pypi.org:443\\r\\n\\r\\n")\n    print("connected", port, s.recv(200).split(b"\\r\\n")[0].decode())\nexcept OSError as e:\n    print("refused", port, e.errno)',
            ),
          },
        ],
      });
      const holderWs = path.join(workspaceRoot, sessionKeyToFilename('h'));
      parallel = await harness({
        workspaceRoot,
        parallel: true,
        steps: [
          {
            id: 'holder',
            session: 'h',
            command: py(
              `${NETNS}\nimport socket, time\ns = socket.socket(); s.bind(("127.0.0.1", 48125)); s.listen()\nopen("ready", "w").close(); time.sleep(3); print("held")`,
            ),
          },
          {
            id: 'same-session',
            session: 'h',
            waitFor: path.join(holderWs, 'ready'),
            command: py(`${NETNS}\n${connectTo('48125')}`),
          },
          {
            id: 'other-session',
            session: 'o',
            waitFor: path.join(holderWs, 'ready'),
            command: py(`${NETNS}\n${connectTo('48125')}`),
          },
        ],
      });
    }, 120_000);

    afterAll(() => {
      if (base !== '') rmSync(base, { recursive: true, force: true });
    });

    it("a session's runs keep one namespace; another session has its own", () => {
      const first = out(serial, 'a-first').trim();
      expect(first).toMatch(/^netns net:\[\d+\]$/);
      expect(out(serial, 'a-last').trim()).toBe(first);
      expect(out(serial, 'b-first').trim()).not.toBe(first);
    });

    it('a port a run closed first is free for the next run at once (no TIME_WAIT kept), where a fresh namespace keeps it', () => {
      expect(out(serial, 'a-serve').trim()).toBe('served');
      expect(out(serial, 'a-rebind').trim()).toBe('bound');
      // Control: in a namespace with the kernel's defaults, the same server leaves its port in TIME_WAIT.
      const control = spawnSync(
        'unshare',
        ['-n', 'sh', '-c', `ip link set lo up && python3 -c '${SERVE_AND_CLOSE}' && python3 -c '${REBIND}'`],
        {
          encoding: 'utf8',
        },
      );
      expect(control.stdout, control.stderr).toMatch(/^served\nbind failed 98$/m);
    });

    it("a listener a run left behind is gone for the session's next run", () => {
      expect(out(serial, 'a-leave-listener').trim()).toBe('left');
      expect(out(serial, 'a-after-listener').trim()).toBe('refused 111');
    });

    it("a run cannot change the namespace's settings or take its loopback down", () => {
      const changed = out(serial, 'a-change-settings');
      expect(changed).not.toContain('sysctl-written');
      expect(changed.trim()).toBe('lo-kept');
      expect(out(serial, 'a-after-settings').trim()).toBe('0\nserved');
    });

    it("an allowHosts run's allowlist is gone for the session's next run, which has no network: its own bridge refuses the host", () => {
      const proxy = out(serial, 'c-proxied').trim();
      expect(proxy).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      // No network is an empty allowlist on a bridge of the run's own: pypi.org is refused there.
      expect(out(serial, 'c-none-after').trim()).toMatch(
        new RegExp(`^connected ${proxy.split(':').at(-1)} HTTP/1\\.1 403 `),
      );
    });

    it("neither another session nor the same session's overlapping run reaches a run's loopback listener", () => {
      const held = out(parallel, 'holder');
      expect(held).toMatch(/held$/m);
      const holderNs = held.split('\n')[0];
      for (const id of ['same-session', 'other-session']) {
        const seen = out(parallel, id);
        expect(seen, id).toMatch(/^refused 111$/m);
        expect(seen.split('\n')[0], id).not.toBe(holderNs);
      }
    });
  },
);
