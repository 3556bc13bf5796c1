import { rmSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { linuxStack, REQUIRED, requiredButMissing } from '../support.js';
import { asIdentityTitle, identities } from './hosts.js';
import { runSessionHarness, type SessionRun } from './session-run.js';

/**
 * A command cannot pass its run off as a set-up failure through the session API (issue 36): execute() and
 * spawn() of a command that prints the helper's own failure line and exits 125 after planting a hook in a
 * new git directory and a symlink out resolve with its exit 125 and those in the details, as root and as
 * uid 65534, through the session harness. (The genuine set-up failure's control is
 * e2e/linux/forged-setup.test.ts, through the same driver.)
 */
const stack = linuxStack();

type Picked = {
  exitCode?: number;
  stderr?: string;
  quarantined?: string[];
  symlinksOut?: unknown[];
  error?: string;
};

describe.runIf(stack.ok || REQUIRED.size > 0)(
  `session API: a forged set-up failure keeps the run's record${stack.ok ? '' : ` [skipped: ${stack.reason}]`}`,
  () => {
    if (requiredButMissing(stack)) return;
    for (const identity of identities().filter((i) => i.key === 'root' || i.key === 'unprivileged')) {
      describe.skipIf(identity.skip !== undefined)(asIdentityTitle(identity), () => {
        let run: SessionRun | undefined;
        const observed = () => {
          const r = run?.output.results['forged-setup'];
          if (r === undefined) throw new Error('no result for forged-setup');
          if (r.crashed) throw new Error(`forged-setup crashed: ${r.crashed.code} ${r.crashed.message}`);
          return r as unknown as { workspace: string; executed: Picked; spawned: Picked };
        };
        beforeAll(async () => {
          run = await runSessionHarness(identity.uid, ['forged-setup']);
        }, 180_000);
        afterAll(() => {
          if (run !== undefined) rmSync(run.base, { recursive: true, force: true });
        });

        for (const [how, n] of [
          ['execute', 1],
          ['spawn', 2],
        ] as const)
          it(`${how}(): the command's own exit 125, its set-aside hook and symlink out kept`, () => {
            const { workspace, ...r } = observed();
            const got = how === 'execute' ? r.executed : r.spawned;
            expect(got.error, JSON.stringify(got)).toBeUndefined();
            expect(got.exitCode, JSON.stringify(got)).toBe(125);
            expect(got.stderr).toContain('forged by the command');
            expect(got.quarantined).toEqual(
              expect.arrayContaining([path.join(workspace, `sub${n}/.git/hooks`)]),
            );
            expect(got.symlinksOut).toEqual([
              { path: path.join(workspace, `out${n}`), target: '/etc/passwd', leads: 'outside' },
            ]);
          });
      });
    }
  },
);
