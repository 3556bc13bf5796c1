import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { linuxStack, REQUIRED, requiredButMissing, runHarness, tempDirs } from '../support.js';
import { asIdentityTitle, identities } from './hosts.js';

/**
 * Every budget covers what the sandbox reports, not only what the command prints: with
 * `maxOutputBytes = 65536`, a command floods each kind of record the sandbox keeps of a run (refused
 * connections to names off the allowlist, on loopback through the run's proxy; symlinks out of the
 * workspace; git directories whose hooks the check after the run sets aside) in the real sandbox, as root
 * and as uid 65534. The output's `details`, its JSON and the audit record stay within the budget, and the
 * counts of what was left out add up. The control: a small run of each keeps every record, omitting
 * nothing.
 */

const stack = linuxStack();
const tempDir = tempDirs();
const BUDGET = 65536;
const CONNECTS = 3000;
const LINKS = 3000;
const REPOS = 200;

const connects = (n: number) => `
import socket
for i in range(${n}):
    s = socket.create_connection(("127.0.0.1", 3128))
    s.sendall(("CONNECT h%d.off.test:443 HTTP/1.1\\r\\nHost: h%d.off.test:443\\r\\n\\r\\n" % (i, i)).encode())
    s.recv(1024)
    s.close()
`;
const links = (n: number) => `
import os
os.makedirs("links", exist_ok=True)
for i in range(${n}):
    os.symlink("/etc", "links/l%d" % i)
`;
const repos = (n: number) => `
import os
for i in range(${n}):
    for d in ("hooks", "objects", "refs"):
        os.makedirs("repos/r%d/.git/%s" % (i, d))
    with open("repos/r%d/.git/HEAD" % i, "w") as f:
        f.write("ref: refs/heads/main\\n")
    with open("repos/r%d/.git/hooks/pre-commit" % i, "w") as f:
        f.write("#!/bin/sh\\n")
`;

interface Result {
  id: string;
  error?: { code: string; message: string };
  exitCode?: number;
  stderr?: string;
  denials: unknown[];
  symlinksOut?: unknown[];
  quarantine?: unknown[];
  detailsBytes: number;
  jsonBytes: number;
  omitted?: Record<string, number>;
  denialsDropped?: { count: number; byKind: Record<string, number>; otherTargets: number };
  audit?: { bytes: number; denials: unknown[] };
}

describe.runIf(stack.ok || REQUIRED.size > 0)(
  `what the sandbox reports stays within the output budget${stack.ok ? '' : ` [skipped: ${stack.reason}]`}`,
  () => {
    if (requiredButMissing(stack)) return;
    for (const identity of identities().filter((i) => i.key === 'root' || i.key === 'unprivileged')) {
      describe.skipIf(identity.skip !== undefined)(asIdentityTitle(identity), () => {
        const results = new Map<string, Result>();
        const r = (id: string): Result => {
          const got = results.get(id);
          if (got === undefined) throw new Error(`no result for ${id}`);
          expect(got.error, got.error?.message).toBeUndefined();
          return got;
        };
        beforeAll(async () => {
          const base = tempDir('aleph-report-flood-');
          const { chmodSync, chownSync, mkdirSync } = await import('node:fs');
          chmodSync(base, 0o755);
          const root = path.join(base, 'ws');
          mkdirSync(root, { mode: 0o755 });
          // A HOME of the test's own: the quarantine and the session homes go there, and with the base.
          const home = path.join(base, 'home');
          mkdirSync(home, { mode: 0o700 });
          if (identity.uid !== (process.getuid?.() ?? 0)) {
            chownSync(root, identity.uid, identity.uid);
            chownSync(home, identity.uid, identity.uid);
          }
          const net = { spawnSubprocess: false, network: { kind: 'allowHosts', hosts: ['api.test'] } };
          const py = (id: string, script: string, capabilities: object = {}) => ({
            id,
            session: id,
            command: { program: 'python3', args: ['-c', script], capabilities, timeout: 120_000 },
          });
          const out = await runHarness<Result>(
            {
              workspaceRoot: root,
              maxOutputBytes: BUDGET,
              driver: { resolve: { 'api.test': ['127.0.0.1'] } },
              steps: [
                py('denials', connects(CONNECTS), net),
                py('denials-few', connects(5), net),
                py('links', links(LINKS)),
                py('links-few', links(5)),
                py('repos', repos(REPOS)),
                py('repos-few', repos(2)),
              ],
            },
            { ...process.env, HOME: home },
            { uid: identity.uid, mountpoint: path.join(base, 'repo') },
          );
          for (const [id, result] of out.results) results.set(id, result);
        }, 600_000);
        afterAll(() => results.clear());

        it('a flood of refused connections: details, JSON and audit within the budget, the rest counted', () => {
          const d = r('denials');
          expect(d.detailsBytes).toBeLessThanOrEqual(BUDGET);
          expect(d.jsonBytes).toBeLessThanOrEqual(2 * BUDGET + 4096);
          expect(d.audit?.bytes).toBeLessThanOrEqual(BUDGET + 16384);
          const dropped = d.denialsDropped;
          expect(dropped).toBeDefined();
          expect(d.denials.length + (dropped?.count ?? 0)).toBe(CONNECTS);
          expect(d.omitted?.denials).toBe(dropped?.count);
          expect(Object.values(dropped?.byKind ?? {}).reduce((a, b) => a + b, 0)).toBe(dropped?.count);
          expect(d.audit?.denials).toEqual(d.denials);
        });

        it('a flood of symlinks out and of set-aside hooks: within the budget, the rest counted by path', () => {
          const l = r('links');
          expect(l.detailsBytes).toBeLessThanOrEqual(BUDGET);
          expect(l.audit?.bytes).toBeLessThanOrEqual(BUDGET + 16384);
          expect((l.symlinksOut?.length ?? 0) + (l.omitted?.symlinksOut ?? 0)).toBe(LINKS);
          const q = r('repos');
          expect(q.detailsBytes).toBeLessThanOrEqual(BUDGET);
          expect(q.audit?.bytes).toBeLessThanOrEqual(BUDGET + 16384);
          expect((q.quarantine?.length ?? 0) + (q.omitted?.quarantine ?? 0)).toBeGreaterThanOrEqual(REPOS);
          expect(q.omitted?.quarantine).toBeGreaterThan(0);
        });

        it('control: a few records of each kind are kept whole, nothing omitted', () => {
          expect(r('denials-few').denials).toHaveLength(5);
          expect(r('links-few').symlinksOut).toHaveLength(5);
          expect(r('repos-few').quarantine?.length).toBeGreaterThanOrEqual(2);
          for (const id of ['denials-few', 'links-few', 'repos-few']) {
            expect(r(id).omitted).toBeUndefined();
            expect(r(id).denialsDropped).toBeUndefined();
          }
        });
      });
    }
  },
);
