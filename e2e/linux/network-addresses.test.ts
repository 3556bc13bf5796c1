import { chmodSync, chownSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { gapNames } from '@aleph/driver-linux';
import type { SandboxDenial } from '@aleph/sandbox-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { linuxStack, REQUIRED, requiredButMissing, runHarness } from '../support.js';
import { identities as allIdentities, declaredGaps } from './hosts.js';
import { addressHosts, addressSteps, trustSteps } from './network-address-steps.js';
import { type LocalServer, startEcho, startHello, startHttpsWithCa } from './network-servers.js';

/**
 * Transparent egress for every allowlist entry, in the real sandbox as each identity of hosts.ts whose
 * tier has a network namespace: entries given as addresses (127.0.0.2, ::1) reached by clients that
 * ignore the proxy variables, a name the host resolves itself, each refusal on that path a typed denial,
 * host loopback services no entry names out of reach; and the host's TLS trust (NODE_EXTRA_CA_CERTS,
 * SSL_CERT_FILE) followed inside, with a control run whose host trusts nothing extra.
 */

const stack = linuxStack();
const identities = allIdentities().filter((identity) => identity.skip === undefined);

interface StepResult {
  id: string;
  exitCode?: number | null;
  stdout?: string;
  stderr?: string;
  denials?: SandboxDenial[];
  error?: { code: string; message: string };
}

describe.skipIf(!stack.ok && !stack.missing.some((m) => REQUIRED.has(m)))(
  `transparent egress to address entries and the host's TLS trust${stack.ok ? '' : ` [skipped: ${stack.reason}]`}`,
  () => {
    requiredButMissing(stack);

    describe.each(identities)('as $name', (identity) => {
      const transparent = !new Set(gapNames(declaredGaps(identity))).has('transparent-egress');
      const inNamespace = it.skipIf(!transparent);
      const why = transparent ? '' : ' [skipped: the tier declares transparent-egress]';
      let base = '';
      const servers: LocalServer[] = [];
      let hidden: LocalServer | undefined;
      let hostOnly: LocalServer | undefined;
      let results = new Map<string, StepResult>();
      let trusted = new Map<string, StepResult>();
      let untrusted = new Map<string, StepResult>();
      let ports = { web: 0, echo: 0, web6: 0, hidden: 0, hostOnly: 0 };
      let tlsPort = 0;
      let caFile = '';

      beforeAll(async () => {
        base = mkdtempSync(path.join(os.tmpdir(), 'aleph-e2e-addr-'));
        chmodSync(base, 0o755);
        const [web, echo, web6, hide, own] = await Promise.all([
          startHello('127.0.0.2'),
          startEcho('127.0.0.2'),
          startHello('::1'),
          startHello('127.0.0.2'),
          startHello('127.0.0.1'),
        ]);
        const tls = await startHttpsWithCa(path.join(base, 'tls'), 'tls.test');
        chmodSync(path.join(base, 'tls'), 0o755);
        chmodSync(tls.ca, 0o644);
        servers.push(web, echo, web6, hide, own, tls);
        hidden = hide;
        hostOnly = own;
        ports = { web: web.port, echo: echo.port, web6: web6.port, hidden: hide.port, hostOnly: own.port };
        tlsPort = tls.port;
        const workspaceRoot = path.join(base, 'workspaces');
        mkdirSync(workspaceRoot, { mode: 0o755 });
        const home = path.join(base, 'home');
        mkdirSync(home, { mode: 0o700 });
        if (identity.uid !== process.getuid?.()) {
          chownSync(workspaceRoot, identity.uid, identity.uid);
          chownSync(home, identity.uid, identity.uid);
        }
        const driver = {
          resolve: { 'hosts.test': ['127.0.0.2'], 'tls.test': ['127.0.0.1'], 'lan.test': ['10.255.0.1'] },
        };
        // No CA variable of the test runner's own reaches the harness: each run says exactly what its
        // host trusts.
        const env: NodeJS.ProcessEnv = { ...process.env, HOME: home };
        for (const v of ['NODE_EXTRA_CA_CERTS', 'SSL_CERT_FILE', 'SSL_CERT_DIR', 'CURL_CA_BUNDLE'])
          delete env[v];
        const as = { uid: identity.uid, mountpoint: path.join(base, 'repo'), wrap: identity.wrap };
        const run = (steps: unknown, extra: NodeJS.ProcessEnv) =>
          runHarness<StepResult>({ workspaceRoot, driver, steps }, { ...env, ...extra }, as).then(
            (r) => r.results,
          );
        if (transparent) results = await run(addressSteps(ports), {});
        caFile = tls.ca;
        trusted = await run(trustSteps(tlsPort), { NODE_EXTRA_CA_CERTS: tls.ca, SSL_CERT_FILE: tls.ca });
        untrusted = await run(trustSteps(tlsPort), {});
      }, 300_000);

      afterAll(async () => {
        await Promise.all(servers.splice(0).map((s) => s.close()));
        if (base !== '') rmSync(base, { recursive: true, force: true });
      });

      const get = (from: Map<string, StepResult>, id: string) => {
        const r = from.get(id);
        if (r === undefined) throw new Error(`no result for ${id}`);
        if (r.error) throw new Error(`${id} was rejected: ${r.error.code} ${r.error.message}`);
        return { ...r, stdout: r.stdout ?? '', stderr: r.stderr ?? '', denials: r.denials ?? [] };
      };
      const ok = (id: string) => {
        const r = get(results, id);
        expect(r.exitCode, `${id}: ${r.stdout}${r.stderr}`).toBe(0);
        expect(r.denials, id).toEqual([]);
        return r.stdout;
      };
      const refused = (id: string) => get(results, id).denials.map((d) => [d.kind, d.target]);

      inNamespace(
        `Node 20's fetch, curl --noproxy and a Python socket reach an IPv4 address entry${why}`,
        () => {
          expect(ok('fetch-v4')).toBe('200 hello 127.0.0.2\n');
          expect(ok('curl-v4')).toBe('hello 127.0.0.2');
          expect(ok('python-v4')).toBe('ping\n');
        },
      );

      inNamespace(`the same for an IPv6 address entry${why}`, () => {
        expect(ok('fetch-v6')).toBe('200 hello ::1\n');
        expect(ok('curl-v6')).toBe('hello ::1');
        expect(ok('python-v6')).toBe('HTTP\n');
      });

      inNamespace(
        `a name the host resolves is answered by the sandbox's resolver: /etc/hosts inside has localhost alone${why}`,
        () => {
          expect(ok('hosts-name')).toBe(
            '127.0.0.1 localhost\n::1 localhost ip6-localhost ip6-loopback\n127.77\nhello 127.0.0.2\n200 hello 127.0.0.2\n',
          );
        },
      );

      inNamespace(`each refusal on the transparent path is a typed denial with what allows it${why}`, () => {
        expect(get(results, 'denied-address').stdout).toBe('403');
        expect(get(results, 'denied-address').denials).toEqual([
          {
            kind: 'network.host',
            target: `127.0.0.3:${ports.web}`,
            reason: '127.0.0.3 is not on the allowlist',
            allowWith: expect.stringMatching(
              /^add "127\.0\.0\.3" to the allowed hosts: aleph-sandbox run --net /,
            ),
          },
        ]);
        expect(get(results, 'denied-address-raw').stdout).toBe('HTTP\n');
        expect(refused('denied-address-raw')).toEqual([['network.host', `10.255.0.9:${ports.echo}`]]);
        expect(refused('denied-address-v6')).toEqual([['network.host', `[2001:db8::9]:${ports.web}`]]);
        expect(refused('denied-port')).toEqual([['network.port', `127.0.0.2:${ports.web6}`]]);
        expect(get(results, 'denied-port').denials[0]?.allowWith).toMatch(`"127.0.0.2:${ports.web6}"`);
        expect(get(results, 'denied-outside-egress').stdout).toBe('ConnectionRefusedError\n');
        expect(get(results, 'denied-outside-egress').denials).toEqual([
          {
            kind: 'network.port',
            target: `127.0.0.4:${ports.hidden}`,
            reason: `127.0.0.4 is allowed, but port ${ports.hidden} is not among the sandbox's transparent egress ports, so the connection was refused inside (a client using the proxy variables reaches it)`,
            allowWith: expect.stringMatching(`^add "127\\.0\\.0\\.4:${ports.hidden}" to the allowed hosts`),
          },
        ]);
        expect(get(results, 'denied-private').stdout).toMatch(
          /^403 403 Forbidden by aleph-proxy: lan\.test resolves to 10\.255\.0\.1, /,
        );
        expect(get(results, 'denied-private').denials).toEqual([
          {
            kind: 'network.private-address',
            target: `lan.test:${ports.web}`,
            reason: expect.stringMatching(/^lan\.test resolves to 10\.255\.0\.1, /),
            allowWith: expect.stringMatching(
              /^add "10\.255\.0\.1" to the allowed hosts: aleph-sandbox run --net /,
            ),
          },
        ]);
        expect(get(results, 'denied-name').stdout).toBe('ENOTFOUND\n');
        expect(refused('denied-name')).toEqual([['network.dns', 'elsewhere.test']]);
      });

      inNamespace(`a host loopback service on a port no entry names stays out of reach${why}`, () => {
        expect(get(results, 'probe-hidden-port').stdout).toBe('ConnectionRefusedError\n');
        expect(refused('probe-hidden-port')).toEqual([['network.port', `127.0.0.2:${ports.hidden}`]]);
        // ::1 is the sandbox's own loopback too, where a server of the command may not listen yet: no
        // denial for it.
        expect(get(results, 'probe-v6-hidden-port').stdout).toBe('ConnectionRefusedError\n');
        expect(refused('probe-v6-hidden-port')).toEqual([]);
        expect(hidden?.connections()).toBe(0);
        const spellings = get(results, 'probe-host-loopback');
        expect(spellings.stdout).toBe(
          ['127.0.0.1', '0.0.0.0', '2130706433', '127.1', '::ffff:127.0.0.1', '::', '::1', 'localhost']
            .map((h) => `${h} refused\n`)
            .join(''),
        );
        expect(hostOnly?.connections()).toBe(0);
        // Each went through the bridge to the proxy, which refused the host's loopback on that port (the
        // IPv4 spellings as 127.0.0.1, the IPv6 ones as ::1, which the list allows on another port).
        expect(spellings.denials.map((d) => [d.kind, d.target])).toEqual([
          ['network.host', `127.0.0.1:${ports.hostOnly}`],
          ['network.port', `[::1]:${ports.hostOnly}`],
        ]);
        expect(addressHosts(ports).join(',')).not.toContain(String(ports.hidden));
      });

      inNamespace(
        `an HTTPS host that only the host's NODE_EXTRA_CA_CERTS / SSL_CERT_FILE trusts is trusted inside${why}`,
        () => {
          expect(get(trusted, 'tls-fetch').stdout).toBe('200 hello tls.test\n');
          expect(get(trusted, 'tls-curl').stdout).toBe('hello tls.test exit 0\n');
        },
      );

      it("the host's CA file, named inside by the same variables, is trusted through the proxy variables too", () => {
        expect(get(trusted, 'tls-curl-proxy').stdout).toBe('hello tls.test exit 0\n');
        // Mounted read-only at /run/aleph/ca-N-NAME (tiers 1–2), or readable where it is (tier 3).
        const inside = transparent ? '/run/aleph/ca-0-ca.pem' : caFile;
        expect(get(trusted, 'tls-env').stdout).toBe(
          `NODE_EXTRA_CA_CERTS=${inside}\nSSL_CERT_FILE=${inside}\n`,
        );
      });

      it('the control: without them the same host fails with a certificate error', () => {
        if (transparent) {
          expect(get(untrusted, 'tls-fetch').stdout).toMatch(
            /^(SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_VERIFY_LEAF_SIGNATURE|UNABLE_TO_GET_ISSUER_CERT_LOCALLY)\n$/,
          );
          expect(get(untrusted, 'tls-curl').stdout).toMatch(/SSL certificate problem[\s\S]* exit 60\n$/);
        }
        expect(get(untrusted, 'tls-curl-proxy').stdout).toMatch(/SSL certificate problem[\s\S]* exit 60\n$/);
        expect(get(untrusted, 'tls-env').stdout).toBe('');
      });
    });
  },
);
