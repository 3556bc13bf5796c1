import { rmSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { linuxStack, REQUIRED, requiredButMissing } from '../support.js';
import { asIdentityTitle, identities } from './hosts.js';
import { type McpRun, runMcpHarness } from './mcp-run.js';

/**
 * A command cannot pass its run off as a set-up failure through MCP either (issue 36): the official SDK's
 * Client over stdio against the built `aleph-sandbox mcp`, as root and as uid 65534. The command prints the
 * helper's own failure line and exits 125 after planting a hook in a new git directory, a symlink out and a
 * refused connection: `execute` answers with the command's exit 125 and its denial (not "not run"), and the
 * `aleph://audit` resource's record keeps the set-aside hook, the symlink and the denial. (The genuine
 * set-up failure's control is e2e/linux/forged-setup.test.ts, through the same driver.)
 */
const stack = linuxStack();

type Observed = {
  forged: { isError: boolean; text: string; structured: Record<string, unknown> & { denials: unknown[] } };
  ws: string;
  audit: { exitCode?: number; details?: Record<string, unknown> };
};

describe.runIf(stack.ok || REQUIRED.size > 0)(
  `MCP: a forged set-up failure keeps the run's record${stack.ok ? '' : ` [skipped: ${stack.reason}]`}`,
  () => {
    if (requiredButMissing(stack)) return;
    for (const identity of identities().filter((i) => i.key === 'root' || i.key === 'unprivileged')) {
      describe.skipIf(identity.skip !== undefined)(asIdentityTitle(identity), () => {
        let run: McpRun | undefined;
        const observed = (): Observed => {
          const r = run?.output.results['forged-setup'];
          if (r === undefined) throw new Error('no result for forged-setup');
          if (r.crashed) throw new Error(`forged-setup crashed: ${r.crashed.code} ${r.crashed.message}`);
          return r as unknown as Observed;
        };
        beforeAll(async () => {
          run = await runMcpHarness(identity.uid, ['forged-setup']);
        }, 180_000);
        afterAll(() => {
          if (run !== undefined) rmSync(run.base, { recursive: true, force: true });
        });

        it('execute gives the command its own exit 125 and its denial, not a set-up failure', () => {
          const { forged } = observed();
          expect(forged.structured.status, forged.text).toBe('completed');
          expect(forged.structured.exitCode, forged.text).toBe(125);
          expect(forged.text).not.toMatch(/not run|sandbox helper failed/);
          expect(forged.structured.denials).toEqual([expect.objectContaining({ target: 'evil.test:9' })]);
        });

        it('aleph://audit keeps the set-aside hook, the symlink out and the denial', () => {
          const { audit, ws } = observed();
          expect(audit.exitCode).toBe(125);
          expect(audit.details?.quarantined).toEqual(
            expect.arrayContaining([path.join(ws, 'sub/.git/hooks')]),
          );
          expect(audit.details?.symlinksOut).toEqual([
            { path: path.join(ws, 'out'), target: '/etc/passwd', leads: 'outside' },
          ]);
          expect(audit.details?.denials).toEqual([expect.objectContaining({ target: 'evil.test:9' })]);
        });
      });
    }
  },
);
