import { chmodSync, chownSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { linuxStack, nodeArgvAs, REQUIRED, requiredButMissing, runAsync } from '../support.js';
import { identities as allIdentities, asIdentityTitle, type Identity } from './hosts.js';

/**
 * A refused subprocess in an MCP `execute` result (issue 39, item 1): `aleph-sandbox mcp` grants
 * subprocesses to every call, so the server of @aleph/mcp runs in a process of the test's
 * (e2e/linux/mcp-spawn-run.mjs: the real Linux driver, the config's strict baseline, no grants) as root
 * and as uid 65534. An `argv` call whose forks all fail gets one `process.spawn` denial naming the program
 * in its structured result; a call that only prints the supervisor's line gets none. (The control with
 * subprocesses allowed is the CLI's, in spawn-denial.test.ts.)
 */

const stack = linuxStack();

interface Denial {
  kind: string;
  target: string;
  allowWith: string;
}
interface Structured {
  status: string;
  stdout: string;
  stderr: string;
  denials: Denial[];
}

const FORKS = `
import os
refused = 0
for i in range(20):
    try:
        pid = os.fork()
    except OSError:
        refused += 1
        continue
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
print(refused, flush=True)
`;

const identities = allIdentities().filter((i) => i.key === 'root' || i.key === 'unprivileged');

describe.skipIf(!stack.ok && !stack.missing.some((m) => REQUIRED.has(m)))(
  `a refused subprocess and a refused write in an MCP execute result${stack.ok ? '' : ` [skipped: ${stack.reason}]`}`,
  () => {
    if (requiredButMissing(stack)) return;

    describe.each(identities)('$key', (identity: Identity) => {
      let base = '';
      beforeAll(() => {
        if (identity.skip !== undefined) return;
        base = mkdtempSync(path.join(os.tmpdir(), 'aleph-e2e-mcp-spawn-'));
        chmodSync(base, 0o755);
        for (const d of ['home', 'wsroot']) {
          mkdirSync(path.join(base, d), { mode: 0o755 });
          if (identity.uid !== process.getuid?.()) chownSync(path.join(base, d), identity.uid, identity.uid);
        }
      });
      afterAll(() => {
        if (base !== '') rmSync(base, { recursive: true, force: true });
      });

      it.skipIf(identity.skip !== undefined)(
        `${asIdentityTitle(identity)}: execute reports the refused forks as one process.spawn denial`,
        async () => {
          const steps = [
            { id: 'forks', args: { argv: ['/usr/bin/python3', '-c', FORKS] } },
            { id: 'no-fork', args: { argv: ['/usr/bin/python3', '-c', 'print("spawn 3 :python3")'] } },
            {
              id: 'write',
              args: {
                argv: [
                  '/usr/bin/python3',
                  '-c',
                  "try:\n    open('/usr/aleph-e2e-mcp', 'w')\nexcept OSError as e:\n    print(e.errno)",
                ],
              },
            },
          ];
          const mountpoint = path.join(base, 'repo');
          if (identity.uid !== process.getuid?.()) mkdirSync(mountpoint, { recursive: true });
          const [cmd, ...args] = nodeArgvAs(identity.uid, mountpoint, 'e2e/linux/mcp-spawn-run.mjs') as [
            string,
            ...string[],
          ];
          const r = await runAsync(cmd, args, {
            input: JSON.stringify({ workspaceRoot: path.join(base, 'wsroot'), steps }),
            env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: path.join(base, 'home') },
          });
          expect(r.status, r.stderr).toBe(0);
          const { results } = JSON.parse(r.stdout) as { results: Record<string, Structured> };
          const forks = results.forks as Structured;
          expect(forks.status, JSON.stringify(forks)).toBe('completed');
          expect(forks.stdout.trim()).toBe('20');
          const denied = forks.denials.filter((d) => d.kind === 'process.spawn');
          expect(denied.map((d) => d.target)).toEqual(['python3']);
          expect(denied[0]?.allowWith).toMatch(/--allow-spawn/);
          const quiet = results['no-fork'] as Structured;
          expect(quiet.stdout.trim()).toBe('spawn 3 :python3');
          expect(quiet.denials.filter((d) => d.kind === 'process.spawn')).toEqual([]);
          // A write a read-only mount refused: EROFS, and a filesystem.write denial naming the grant.
          const write = results.write as Structured;
          expect(write.stdout.trim()).toBe('30');
          expect(
            write.denials.filter((d) => d.kind === 'filesystem.write').map((d) => [d.target, d.allowWith]),
          ).toEqual([['/usr/aleph-e2e-mcp', expect.stringMatching(/--allow-write \/usr /)]]);
        },
        120_000,
      );
    });
  },
);
