import { spawnSync } from 'node:child_process';
import dgram from 'node:dgram';
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { gapNames } from '@aleph/driver-linux';
import type { SandboxDenial } from '@aleph/sandbox-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliArgvAs, linuxStack, REQUIRED, requiredButMissing } from '../support.js';
import { declaredGaps, type Identity, identities } from './hosts.js';

/**
 * UDP refusals are typed denials (issue 39 §1): in the real sandbox with an allowlist (its own network
 * namespace, every address routed to its loopback), a datagram to a host of the host's loopback that is
 * not allowed, and one to an allowed host (which is allowed over TCP only: QUIC's case), never arrive, and
 * each is a `network.udp` denial in `run --json`'s `details.denials` naming the target and what allows it;
 * a datagram to the sandbox's own loopback and DNS through its resolver are not. The control: the same
 * datagrams sent unsandboxed reach the host's UDP servers. As root and as uid 65534; a tier without a
 * network namespace (declared `transparent-egress`) refuses UDP sockets outright and is not run here.
 */
const stack = linuxStack();

/**
 * The command: datagrams to PORT on 127.0.0.2 (not allowed), 127.0.0.3 (allowed) and 127.0.0.1, and a
 * lookup of a name nobody allowed. With `inside`, also to port 443 of the allowed name aleph-udp.test (the
 * sandbox's resolver answers it; HTTP/3's case) and, where the sandbox has IPv6, to [::2]: neither is sent
 * unsandboxed, where ::2 would follow the host's default route.
 */
const SEND = `
const dgram = require('node:dgram');
const dns = require('node:dns').promises;
const port = Number(process.argv[1]);
const inside = process.argv[2] === 'inside';
const send = (s, host, p = port) => new Promise((resolve) => s.send('aleph-udp ' + host, p, host, (e) => resolve(e)));
(async () => {
  const s = dgram.createSocket('udp4');
  for (const host of ['127.0.0.2', '127.0.0.3', '127.0.0.1']) await send(s, host);
  await dns.lookup('aleph-udp-nowhere.test').catch(() => undefined);
  if (inside) {
    const named = await dns.lookup('aleph-udp.test', { family: 4 }).catch(() => undefined);
    if (named !== undefined) await send(s, named.address, 443);
    const s6 = dgram.createSocket('udp6');
    s6.on('error', () => undefined);
    const e = await send(s6, '::2');
    console.log(e === undefined || e === null ? 'ipv6' : 'no ipv6');
    s6.close();
  }
  s.close();
})();
`;

interface Run {
  exitCode: number | null;
  stdout: string;
  stderr: string;
  details?: { denials?: SandboxDenial[] };
}

/** A UDP server on `host` that keeps what it receives. */
async function udpServer(
  host: string,
  port = 0,
): Promise<{ port: number; got: string[]; close: () => void }> {
  const socket = dgram.createSocket('udp4');
  const got: string[] = [];
  socket.on('message', (m) => got.push(String(m)));
  await new Promise<void>((resolve, reject) => {
    socket.once('error', reject);
    socket.bind(port, host, () => resolve());
  });
  return { port: socket.address().port, got, close: () => socket.close() };
}

describe.runIf(stack.ok || REQUIRED.size > 0)(
  `UDP refusals are typed denials${stack.ok ? '' : ` [skipped: ${stack.reason}]`}`,
  () => {
    if (requiredButMissing(stack)) return;
    let base = '';
    const servers: { port: number; got: string[]; close: () => void }[] = [];
    let port = 0;
    beforeAll(async () => {
      base = mkdtempSync(path.join(os.tmpdir(), 'aleph-e2e-udp-'));
      chmodSync(base, 0o755);
      mkdirSync(path.join(base, 'checkout'), { mode: 0o755 });
      // One port on both hosts of the host's loopback.
      const first = await udpServer('127.0.0.2');
      servers.push(first, await udpServer('127.0.0.3', first.port));
      port = first.port;
    });
    afterAll(() => {
      for (const s of servers.splice(0)) s.close();
      if (base !== '') rmSync(base, { recursive: true, force: true });
    });

    /** `run --json --net 127.0.0.3,aleph-udp.test -- node -e SEND PORT inside` as `identity`, in a workspace of its own. */
    function sandboxed(identity: Identity, net: 'allowlist' | 'none' = 'allowlist'): Run {
      const dir = path.join(base, `${identity.key}-${net}`);
      const home = path.join(dir, 'home');
      const ws = path.join(dir, 'ws');
      mkdirSync(home, { recursive: true });
      mkdirSync(ws);
      for (const d of [home, ws])
        if (identity.uid !== process.getuid?.()) chownSync(d, identity.uid, identity.uid);
      chmodSync(dir, 0o755);
      const netArgs = net === 'none' ? [] : ['--net', '127.0.0.3,aleph-udp.test'];
      const args = ['run', '--json', ...netArgs, '--workspace', ws, '--'];
      const [cmd, ...rest] = [
        ...identity.wrap,
        ...cliArgvAs(identity.uid, path.join(base, 'checkout'), [
          ...args,
          process.execPath,
          '-e',
          SEND,
          String(port),
          'inside',
        ]),
      ] as [string, ...string[]];
      const r = spawnSync(cmd, rest, {
        env: { PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin', HOME: home },
        cwd: dir,
        encoding: 'utf8',
        timeout: 120_000,
        input: '',
      });
      try {
        return JSON.parse(r.stdout) as Run;
      } catch {
        throw new Error(`run exited ${r.status}: ${r.stdout.slice(0, 500)} ${r.stderr.slice(0, 2000)}`);
      }
    }

    it('the control: unsandboxed, the datagrams reach the host’s UDP servers', async () => {
      const r = spawnSync(process.execPath, ['-e', SEND, String(port)], {
        encoding: 'utf8',
        timeout: 30_000,
      });
      expect(r.status, r.stderr).toBe(0);
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(servers[0]?.got).toContain('aleph-udp 127.0.0.2');
      expect(servers[1]?.got).toContain('aleph-udp 127.0.0.3');
      for (const s of servers) s.got.length = 0;
    });

    for (const identity of identities()) {
      const gaps = new Set(gapNames(declaredGaps(identity)));
      const skip =
        identity.skip ??
        (gaps.has('transparent-egress') ? 'the tier declares transparent-egress' : undefined);
      it.skipIf(skip !== undefined)(
        `as ${identity.name}: each datagram that cannot leave is a network.udp denial; none arrives${skip ? ` [skipped: ${skip}]` : ''}`,
        async () => {
          const r = sandboxed(identity);
          expect(r.exitCode, r.stderr).toBe(0);
          const udp = (r.details?.denials ?? []).filter((d) => d.kind === 'network.udp');
          const ipv6 = r.stdout.includes('ipv6\n') && !r.stdout.includes('no ipv6');
          // A kernel with IPv6 gives the sandbox's namespace an IPv6 loopback: the datagram is sent there.
          expect(ipv6, r.stdout).toBe(existsSync('/proc/net/if_inet6'));
          expect(udp.map((d) => d.target).sort()).toEqual(
            [
              `127.0.0.2:${port}`,
              `127.0.0.3:${port}`,
              'aleph-udp.test:443',
              ...(ipv6 ? [`[::2]:${port}`] : []),
            ].sort(),
          );
          // The allowed name is named as the allowlist knows it, not by its synthetic address.
          expect(udp.find((d) => d.target === 'aleph-udp.test:443')?.reason).toMatch(
            /^aleph-udp\.test is allowed, but only over TCP/,
          );
          const [notAllowed, allowed] = [`127.0.0.2:${port}`, `127.0.0.3:${port}`].map((t) =>
            udp.find((d) => d.target === t),
          );
          expect(notAllowed?.reason).toMatch(
            /127\.0\.0\.2 is not on the allowlist: the sandbox relays no UDP/,
          );
          expect(allowed?.reason).toMatch(/127\.0\.0\.3 is allowed, but only over TCP/);
          for (const d of udp) {
            // Honest: no allowlist entry would allow it, so none is offered (nor asked for by approvals).
            expect(d.allowWith).toMatch(/^no allowlist entry allows UDP: .*--net all/);
            expect(d.allowWith).not.toMatch(/add ".*" to the allowed hosts/);
          }
          // The lookup went to the sandbox's resolver (a network.dns denial), not out as a refused datagram.
          expect(r.details?.denials?.some((d) => d.kind === 'network.dns')).toBe(true);
          await new Promise((resolve) => setTimeout(resolve, 200));
          for (const s of servers) expect(s.got).toEqual([]);
        },
        120_000,
      );
      it.skipIf(skip !== undefined)(
        `as ${identity.name}, with no network: each datagram and each name is a typed denial; none arrives${skip ? ` [skipped: ${skip}]` : ''}`,
        async () => {
          const r = sandboxed(identity, 'none');
          expect(r.exitCode, r.stderr).toBe(0);
          const denials = r.details?.denials ?? [];
          const udp = denials.filter((d) => d.kind === 'network.udp').map((d) => d.target);
          expect(udp).toContain(`127.0.0.2:${port}`);
          expect(udp).toContain(`127.0.0.3:${port}`);
          expect(udp).not.toContain(`127.0.0.1:${port}`);
          const names = denials.filter((d) => d.kind === 'network.dns').map((d) => d.target);
          expect(names.sort()).toEqual(['aleph-udp-nowhere.test', 'aleph-udp.test']);
          await new Promise((resolve) => setTimeout(resolve, 200));
          for (const s of servers) expect(s.got).toEqual([]);
        },
        120_000,
      );
    }
  },
);
