import { chmodSync, chownSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { gapNames } from '@aleph/driver-linux';
import type { SandboxDenial } from '@aleph/sandbox-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { linuxStack, REQUIRED, requiredButMissing, runHarness } from '../support.js';
import { identities as allIdentities, declaredGaps } from './hosts.js';
import {
  type LocalServer,
  makeDumbRepo,
  startEcho,
  startHttp,
  startHttps,
  startRegistry,
} from './network-servers.js';
import { egressSteps } from './network-steps.js';

/**
 * Real tools against servers named in allowHosts, with no proxy support of their own (Node 20's fetch,
 * `curl --noproxy '*'`, Python sockets, getent, git over HTTP, a websocket) and with it (curl, npm), in
 * the real sandbox, as each identity of hosts.ts. The resolver is injected (the names lead to the host's
 * loopback, allowed by address and port), so nothing leaves the machine. Every refusal comes back as a
 * typed denial; probes through the new paths (the host's own loopback, addresses the resolver never gave,
 * ports not allowed, hostile DNS messages, forged reports) stay contained. A tier without a network
 * namespace declares `transparent-egress` and runs only what goes through the proxy variables.
 */

const stack = linuxStack();
const identities = allIdentities().filter((identity) => identity.skip === undefined);

interface StepResult {
  id: string;
  exitCode?: number | null;
  stdout?: string;
  stderr?: string;
  timedOut?: boolean;
  denials?: SandboxDenial[];
  audit?: { outcome: string; denials: SandboxDenial[] };
  error?: { code: string; message: string };
}

function ownHome(base: string, uid: number): string {
  const home = path.join(base, `home-${uid}`);
  mkdirSync(home, { recursive: true, mode: 0o700 });
  chownSync(home, uid, uid);
  return home;
}

describe.skipIf(!stack.ok && !stack.missing.some((m) => REQUIRED.has(m)))(
  `network for real tools: DNS inside, transparent egress, typed denials${stack.ok ? '' : ` [skipped: ${stack.reason}]`}`,
  () => {
    requiredButMissing(stack);

    describe.each(identities)('as $name', (identity) => {
      const gaps = new Set(gapNames(declaredGaps(identity)));
      const transparent = !gaps.has('transparent-egress');
      /** `it`, skipped where this tier declares it cannot egress transparently. */
      const inNamespace = it.skipIf(!transparent);
      const why = transparent ? '' : ' [skipped: the tier declares transparent-egress]';
      let base = '';
      const servers: LocalServer[] = [];
      let results = new Map<string, StepResult>();
      let ports = { http: 0, echo: 0, registry: 0, tls: 0 };
      let registryRequests = () => 0;

      beforeAll(async () => {
        base = mkdtempSync(path.join(os.tmpdir(), 'aleph-e2e-net-'));
        chmodSync(base, 0o755);
        const web = await startHttp(makeDumbRepo(path.join(base, 'git')));
        const echo = await startEcho();
        const registry = await startRegistry(path.join(base, 'registry'), 'registry.test');
        const tls = await startHttps(path.join(base, 'tls'));
        servers.push(web, echo, registry, tls);
        registryRequests = registry.requests;
        ports = { http: web.port, echo: echo.port, registry: registry.port, tls: tls.port };
        const workspaceRoot = path.join(base, 'workspaces');
        mkdirSync(workspaceRoot, { mode: 0o755 });
        if (identity.uid !== process.getuid?.()) chownSync(workspaceRoot, identity.uid, identity.uid);
        const plan = {
          workspaceRoot,
          driver: {
            resolve: {
              'api.test': ['127.0.0.1'],
              'raw.test': ['127.0.0.1'],
              'tls.test': ['127.0.0.1'],
              'evil.test': ['127.0.0.1'],
              'registry.test': ['127.0.0.1'],
              'lan.test': ['10.255.0.1'],
            },
          },
          steps: egressSteps(ports, transparent),
        };
        const env = {
          ...process.env,
          HOME: identity.uid === process.getuid?.() ? os.homedir() : ownHome(base, identity.uid),
        };
        const ran = await runHarness<StepResult>(plan, env, {
          uid: identity.uid,
          mountpoint: path.join(base, 'repo'),
          wrap: identity.wrap,
        });
        results = ran.results;
      }, 240_000);

      afterAll(async () => {
        await Promise.all(servers.splice(0).map((s) => s.close()));
        if (base !== '') rmSync(base, { recursive: true, force: true });
      });

      const get = (id: string): Required<Pick<StepResult, 'stdout' | 'stderr' | 'denials'>> & StepResult => {
        const r = results.get(id);
        if (r === undefined) throw new Error(`no result for ${id}`);
        if (r.error) throw new Error(`${id} was rejected: ${r.error.code} ${r.error.message}`);
        return { ...r, stdout: r.stdout ?? '', stderr: r.stderr ?? '', denials: r.denials ?? [] };
      };
      const ok = (id: string) => {
        const r = get(id);
        expect(r.exitCode, `${id}: ${r.stdout}${r.stderr}`).toBe(0);
        expect(r.denials, id).toEqual([]);
        return r.stdout;
      };

      inNamespace(`Node 20's fetch, which ignores the proxy variables, reaches an allowed host${why}`, () => {
        expect(ok('node-fetch')).toBe('200 hello\n');
      });

      inNamespace(
        `curl --noproxy '*' reaches an allowed host through the resolver and egress ports${why}`,
        () => {
          expect(ok('curl-noproxy')).toBe('hello');
        },
      );

      inNamespace(
        `curl --noproxy '*' over TLS: the ClientHello and its server name pass through untouched${why}`,
        () => {
          expect(ok('curl-noproxy-tls')).toBe('hello tls.test');
        },
      );

      inNamespace(`a Python socket.create_connection to an allowed name and port round-trips${why}`, () => {
        expect(ok('python-socket')).toBe('ping\n');
      });

      inNamespace(
        `getent resolves allowed names to the sandbox's own addresses, stable within the run${why}`,
        () => {
          const lines = ok('getent').trim().split('\n');
          expect(lines[0]).toMatch(/^127\.77\.\d+\.\d+\s+api\.test$/);
          expect(lines[1]).toBe(lines[0]);
          expect(lines[2]).toMatch(/^127\.77\.\d+\.\d+\s+raw\.test$/);
          expect(lines[2]?.split(/\s+/)[0]).not.toBe(lines[0]?.split(/\s+/)[0]);
          expect(lines[3]).toBe('reverse api.test');
        },
      );

      inNamespace(
        `git clones over HTTP from an allowed host, with and without the proxy variables${why}`,
        () => {
          expect(ok('git-clone')).toBe('hello from git\nhello from git\n');
        },
      );

      inNamespace(`a websocket upgrade and its frames pass through${why}`, () => {
        expect(ok('websocket')).toBe('HTTP/1.1 101 Switching Protocols\necho True\n');
      });

      it('a client using the proxy variables still reaches allowed hosts', () => {
        expect(ok('curl-proxy')).toBe('hello');
      });

      inNamespace(
        `a name off the allowlist gets NXDOMAIN with an extended error, recorded as network.dns${why}`,
        () => {
          const r = get('dns-denied');
          expect(r.stdout).toBe('getent 2\nrcode 3 ede True\n');
          expect(r.denials).toEqual([
            {
              kind: 'network.dns',
              target: 'evil.test',
              reason: "evil.test is not on the allowlist: the sandbox's resolver answered NXDOMAIN",
              allowWith: expect.stringMatching(
                /^add "evil\.test" to the allowed hosts: aleph-sandbox run --net \S*api\.test:\d+,\S*,evil\.test \(/,
              ),
            },
          ]);
        },
      );

      inNamespace(
        `with no network, a name is refused at once by the resolver and an address by the kernel, each recorded with the --net entry that allows it; the own loopback works${why}`,
        () => {
          const dns = get('none-dns');
          expect(dns.stdout).toBe('ENOTFOUND\ncurl 6\n');
          // Both clients asked; the run keeps one record per kind and target.
          expect(dns.denials.map((d) => [d.kind, d.target])).toEqual([['network.dns', 'api.test']]);
          expect(dns.denials[0]?.allowWith).toMatch(
            /^add "api\.test" to the allowed hosts: aleph-sandbox run --net api\.test \(/,
          );
          const address = get('none-address');
          // No egress port with nothing allowed: the kernel refuses the connection, as with no bridge, and the
          // refusal is reported. No proxy variables are set.
          expect(address.stdout).toBe('curl 7\n0\n');
          expect(address.denials).toEqual([
            {
              kind: 'network.host',
              target: '10.255.0.1:80',
              reason: '10.255.0.1 is not on the allowlist',
              allowWith: expect.stringMatching(
                /^add "10\.255\.0\.1" to the allowed hosts: aleph-sandbox run --net 10\.255\.0\.1 \(/,
              ),
            },
          ]);
          expect(ok('none-loopback')).toBe('own\n');
        },
      );

      it('a host off the allowlist through the proxy: 403 naming it, recorded as network.host in details and in the audit record, through execute() and spawn()', () => {
        const r = get('host-denied');
        expect(r.stdout).toBe('403');
        expect(r.audit).toEqual({ outcome: 'completed', denials: r.denials, bytes: expect.any(Number) });
        const spawned = get('host-denied-spawn');
        expect(spawned.stdout).toBe('403');
        expect(spawned.denials).toEqual(r.denials);
        expect(spawned.audit).toEqual({
          outcome: 'completed',
          denials: r.denials,
          bytes: expect.any(Number),
        });
        expect(r.denials).toEqual([
          {
            kind: 'network.host',
            target: `evil.test:${ports.http}`,
            reason: 'evil.test is not on the allowlist',
            allowWith: expect.stringMatching(
              new RegExp(
                `^add "evil\\.test" to the allowed hosts: aleph-sandbox run --net \\S*api\\.test:${ports.http}\\S*,evil\\.test \\(`,
              ),
            ),
          },
        ]);
      });

      inNamespace(
        `an allowed name on a port it is not allowed on: the HTTP client sees the proxy's 403, recorded as network.port${why}`,
        () => {
          const r = get('port-denied');
          expect(r.stdout).toMatch(
            /^HTTP\/1\.1 403 Forbidden by aleph-proxy: api\.test is allowed only on port \d+, not 80; allow with the allowlist entry "api\.test:80"/,
          );
          expect(r.denials.map((d) => [d.kind, d.target])).toEqual([['network.port', 'api.test:80']]);
        },
      );

      inNamespace(
        `clients that ignore the proxy variables (Node's fetch, curl --noproxy, a Python socket, git) are refused a name off the allowlist, each run with its network.dns denial${why}`,
        () => {
          const refused = (id: string, exitCode: number, stdout: string, stderr: RegExp) => {
            const r = get(id);
            expect([r.exitCode, r.stdout], id).toEqual([exitCode, stdout]);
            expect(r.stderr, id).toMatch(stderr);
            expect(
              r.denials.map((d) => [d.kind, d.target, d.reason]),
              id,
            ).toEqual([
              [
                'network.dns',
                'evil.test',
                "evil.test is not on the allowlist: the sandbox's resolver answered NXDOMAIN",
              ],
            ]);
            expect(r.denials[0]?.allowWith, id).toMatch(
              /^add "evil\.test" to the allowed hosts: aleph-sandbox run --net /,
            );
          };
          refused('node-fetch-denied', 0, 'ENOTFOUND\n', /^$/);
          refused('curl-noproxy-denied', 6, '', /Could not resolve host: evil\.test/);
          refused('python-socket-denied', 0, 'gaierror True\n', /^$/);
          refused('git-denied', 128, '', /Could not resolve host: evil\.test/);
        },
      );

      inNamespace(
        `clients that ignore the proxy variables are refused an allowed name on a port it is not allowed on, with a network.port denial${why}`,
        () => {
          const fetched = get('node-fetch-port-denied');
          expect(fetched.stdout).toMatch(/^403 /);
          expect(fetched.denials.map((d) => [d.kind, d.target])).toEqual([['network.port', 'api.test:80']]);
          expect(fetched.denials[0]?.allowWith).toMatch(/"api\.test:80"/);
          const raw = get('python-socket-port-denied');
          // Bytes that are not HTTP (a TLS record here): the client sees a reset, not the proxy's reply.
          expect(raw.stdout).toBe('ConnectionResetError\n');
          expect(raw.denials.map((d) => [d.kind, d.target])).toEqual([['network.port', 'raw.test:443']]);
        },
      );

      it('an allowed name that resolves to a private address is refused naming the address and what allows it', () => {
        const r = get('private-denied');
        expect(r.stdout).toMatch(
          /403 Forbidden by aleph-proxy: lan\.test resolves to 10\.255\.0\.1, .*allow with the allowlist entry "10\.255\.0\.1"/,
        );
        expect(r.denials).toEqual([
          {
            kind: 'network.private-address',
            target: `lan.test:${ports.http}`,
            reason: expect.stringMatching(/^lan\.test resolves to 10\.255\.0\.1, a loopback, private/),
            allowWith: expect.stringMatching(
              /^add "10\.255\.0\.1" to the allowed hosts: aleph-sandbox run --net \S*lan\.test\S*,10\.255\.0\.1 \(/,
            ),
          },
        ]);
      });

      it('npm through the proxy fails at once on a private registry, printing why and the fix; allowed by address, it installs', () => {
        const r = get('npm-private');
        expect(r.exitCode).not.toBe(0);
        expect(r.timedOut).toBe(false);
        expect(r.stderr).toMatch(
          /E403[\s\S]*Forbidden by aleph-proxy: registry\.test resolves to 127\.0\.0\.1, [^\n]*allow with the allowlist entry "127\.0\.0\.1"/,
        );
        expect(r.denials.map((d) => d.kind)).toEqual(['network.private-address']);
        expect(ok('npm-allowed')).toMatch(/^42$/m);
        expect(registryRequests()).toBeGreaterThan(0);
      });

      inNamespace(
        `probes of the new paths stay contained: the host's loopback, unknown addresses, other ports, hostile DNS, forged reports${why}`,
        () => {
          expect(get('probe-host-loopback').stdout).toBe('host loopback: refused\n');
          expect(get('probe-host-loopback').denials.map((d) => [d.kind, d.target])).toEqual([
            ['network.port', `127.0.0.1:${ports.http}`],
          ]);
          expect(get('probe-unknown-address').stdout).toBe('unknown address: refused\n');
          expect(get('probe-unknown-address').denials.map((d) => [d.kind, d.target])).toEqual([
            ['network.host', `127.77.250.250:${ports.http}`],
          ]);
          expect(get('probe-closed-port').stdout).toBe('closed port: refused\n');
          expect(get('probe-dns-garbage').stdout).toBe('udp 0 127.77\ntcp 0\n');
          const forged = get('probe-forged-report');
          expect(forged.denials.map((d) => `${d.kind} ${d.target}`)).toEqual(['network.dns forged.test']);
        },
      );

      it('the control: with allowAll the same probe reaches the host loopback service', () => {
        expect(get('control-host-loopback').stdout).toBe('host loopback: hello\n');
      });
    });
  },
);
