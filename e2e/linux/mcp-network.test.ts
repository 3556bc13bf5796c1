import { rmSync } from 'node:fs';
import path from 'node:path';
import { gapNames } from '@aleph/driver-linux';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { linuxStack, REQUIRED, requiredButMissing } from '../support.js';
import { asIdentityTitle, declaredGaps, identities } from './hosts.js';
import { type McpRun, runMcpHarness } from './mcp-run.js';
import { type LocalServer, startHttp } from './network-servers.js';

/**
 * The sandbox's network refusals reach an MCP client (issue 27 §4): the official SDK's Client over stdio
 * against the built `aleph-sandbox mcp --net localhost:P,127.0.0.1:P`, as root and as uid 65534. The
 * allowed host answers (the control); a host off the allowlist, a port off it, and (where the tier has
 * transparent egress) a name the sandbox's resolver refuses each come back as the run's typed denials,
 * in the structured result, in the text the model reads and in the audit resource, each naming the
 * `--net` and the capability that would allow it, and the text says what allows it through this server
 * (the execute argument, the server's flag, the config line); asking for that capability is approved
 * through elicitation and then reaches the server. Only the test's loopback servers are reached: localhost is in
 * /etc/hosts, and a refused name is never looked up.
 */

const stack = linuxStack();

type Brief = { isError: boolean; text: string; structured: Record<string, unknown> & { denials: unknown[] } };
type Observed = Record<'allowed' | 'host' | 'port' | 'portAllowed', Brief> & {
  dns?: Brief;
  address?: Brief;
  addressHost?: Brief;
  addressPort?: Brief;
  auditDenials: unknown[][];
};

describe.runIf(stack.ok || REQUIRED.size > 0)(
  `MCP tool results carry the sandbox's network denials${stack.ok ? '' : ` [skipped: ${stack.reason}]`}`,
  () => {
    if (requiredButMissing(stack)) return;
    for (const identity of identities().filter((i) => i.key === 'root' || i.key === 'unprivileged')) {
      describe.skipIf(identity.skip !== undefined)(asIdentityTitle(identity), () => {
        const transparent = !gapNames(declaredGaps(identity)).includes('transparent-egress');
        const servers: LocalServer[] = [];
        let ports = { allowed: 0, other: 0 };
        let run: McpRun | undefined;
        const observed = (): Observed => {
          const r = run?.output.results['network-denials'];
          if (r === undefined) throw new Error('no result for network-denials');
          if (r.crashed) throw new Error(`network-denials crashed: ${r.crashed.code} ${r.crashed.message}`);
          return r as unknown as Observed;
        };

        beforeAll(async () => {
          const missing = path.join('/nonexistent', 'aleph-no-repo');
          servers.push(await startHttp(missing), await startHttp(missing));
          ports = { allowed: servers[0]?.port ?? 0, other: servers[1]?.port ?? 0 };
          run = await runMcpHarness(identity.uid, ['network-denials'], { ports, transparent });
        }, 180_000);
        afterAll(async () => {
          await Promise.all(servers.splice(0).map((s) => s.close()));
          if (run !== undefined) rmSync(run.base, { recursive: true, force: true });
        });

        const allowWith = (entry: string, hosts: string) =>
          `add "${entry}" to the allowed hosts: aleph-sandbox run --net ${hosts}`;

        it('the control: the allowed host answers, with no denial', () => {
          expect(observed().allowed, observed().allowed.text).toMatchObject({
            isError: false,
            structured: { status: 'completed', exitCode: 0, stdout: 'hello', denials: [] },
          });
          expect(servers[0]?.connections()).toBeGreaterThan(0);
        });

        it('a host off the allowlist: the proxy answers 403 and the result carries its network.host denial, structured and as text', () => {
          const { host } = observed();
          const hosts = `127.0.0.1:${ports.allowed},localhost:${ports.allowed}`;
          const denial = {
            kind: 'network.host',
            target: `evil.test:${ports.allowed}`,
            reason: 'evil.test is not on the allowlist',
            allowWith: expect.stringContaining(allowWith('evil.test', `${hosts},evil.test`)),
          };
          expect(host.structured).toMatchObject({ status: 'completed', exitCode: 0, stdout: '403' });
          expect(host.structured.denials).toEqual([denial]);
          expect(host.text).toContain(
            `denied network.host evil.test:${ports.allowed}: evil.test is not on the allowlist; allow with: ${allowWith('evil.test', `${hosts},evil.test`)} (capabilities.network = `,
          );
          // What allows it through this server: the tool's own argument, the server's flag, the config line.
          expect(host.text.split('\n').slice(-5)).toEqual([
            'To allow it: call execute again adding "evil.test" to capabilities.network (the user is asked); or, for every command:',
            `  start the server with: --net ${hosts},evil.test`,
            `  or set in ${run?.config}:`,
            '    [sandbox.network]',
            `    allow = ${JSON.stringify([...hosts.split(','), 'evil.test']).replaceAll(',', ', ')}`,
          ]);
        });

        it('a port off the allowlist: a network.port denial naming the entry that allows it; asking for that entry is approved and reaches the server', () => {
          const { port, portAllowed } = observed();
          const entry = `localhost:${ports.other}`;
          expect(port.structured).toMatchObject({ status: 'completed', stdout: '403' });
          expect(port.structured.denials).toEqual([
            {
              kind: 'network.port',
              target: entry,
              reason: `localhost is allowed only on port ${ports.allowed}, not ${ports.other}`,
              allowWith: expect.stringContaining(
                `add "${entry}" to the allowed hosts: aleph-sandbox run --net `,
              ),
            },
          ]);
          expect(port.text).toContain(
            `To allow it: call execute again adding "${entry}" to capabilities.network (the user is asked)`,
          );
          expect(port.text).toMatch(
            new RegExp(`^denied network\\.port ${entry}: .*; allow with: add "${entry}"`, 'm'),
          );
          expect(portAllowed.structured).toMatchObject({ status: 'completed', stdout: 'hello', denials: [] });
          expect(servers[1]?.connections()).toBeGreaterThan(0);
        });

        it.skipIf(!transparent)(
          `a client ignoring the proxy variables asks the sandbox's resolver for a name off the allowlist: a network.dns denial${transparent ? '' : ' [skipped: the tier declares transparent-egress]'}`,
          () => {
            const { dns } = observed();
            expect(dns?.structured).toMatchObject({ status: 'completed', exitCode: 6 });
            expect(dns?.structured.denials).toEqual([
              {
                kind: 'network.dns',
                target: 'evil.test',
                reason: "evil.test is not on the allowlist: the sandbox's resolver answered NXDOMAIN",
                allowWith: expect.stringContaining(
                  'add "evil.test" to the allowed hosts: aleph-sandbox run --net ',
                ),
              },
            ]);
            expect(dns?.text).toContain('denied network.dns evil.test: ');
          },
        );

        it.skipIf(!transparent)(
          `transparent egress: the address entry answers a client ignoring the proxy variables; an address off the list and a port outside the egress ports are denials${transparent ? '' : ' [skipped: the tier declares transparent-egress]'}`,
          () => {
            const { address, addressHost, addressPort } = observed();
            expect(address?.structured).toMatchObject({
              status: 'completed',
              exitCode: 0,
              stdout: 'hello',
              denials: [],
            });
            expect(addressHost?.structured).toMatchObject({ status: 'completed', stdout: '403' });
            expect(addressHost?.structured.denials).toEqual([
              {
                kind: 'network.host',
                target: `10.1.2.3:${ports.allowed}`,
                reason: '10.1.2.3 is not on the allowlist',
                allowWith: expect.stringContaining(
                  'add "10.1.2.3" to the allowed hosts: aleph-sandbox run --net ',
                ),
              },
            ]);
            expect(addressPort?.structured).toMatchObject({ status: 'completed', exitCode: 7 });
            expect(addressPort?.structured.denials).toEqual([
              {
                kind: 'network.host',
                target: `127.0.0.2:${ports.other}`,
                reason: '127.0.0.2 is not on the allowlist',
                allowWith: expect.stringContaining(
                  'add "127.0.0.2" to the allowed hosts: aleph-sandbox run --net ',
                ),
              },
            ]);
            expect(addressPort?.text).toContain(`denied network.host 127.0.0.2:${ports.other}: `);
          },
        );

        it("the audit resource holds each run's denials, the same records as the tool results", () => {
          const r = observed();
          const runs = [r.allowed, r.host, r.port, r.portAllowed, ...(r.dns === undefined ? [] : [r.dns])];
          for (const extra of [r.address, r.addressHost, r.addressPort])
            if (extra !== undefined) runs.push(extra);
          expect(r.auditDenials).toEqual(runs.map((b) => b.structured.denials));
        });
      });
    }
  },
);
