import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { linuxStack, REQUIRED, requiredButMissing } from '../support.js';
import { asIdentityTitle, identities } from './hosts.js';
import { type McpRun, runMcpHarness } from './mcp-run.js';

/**
 * Every MCP tool result within the output budget: `list_directory` of a directory with 20,000 names of
 * 200 characters (4 MB of names) through the built server and the official SDK client, with
 * `max_output_bytes = 65536`, as root and as uid 65534. Each answer stays within the budget, says it is
 * truncated and gives a cursor; following the cursors gives every name once, in order.
 */

const stack = linuxStack();
const BUDGET = 65536;

interface Page {
  bytes: number;
  count: number;
  truncated: boolean;
  hasCursor: boolean;
  textTail: string;
  isError: boolean;
}

interface BigDirectory {
  pages: Page[];
  firstNames: number;
  continuous: boolean;
  wholePages: number;
  total: number;
  unique: number;
  sorted: boolean;
  first: string;
  last: string;
  small: { count: number; truncated: boolean; hasCursor: boolean };
  badCursor: { isError?: boolean; text?: string; code?: number; message?: string };
  crashed?: { message: string };
}

describe.runIf(stack.ok || REQUIRED.size > 0)(
  `MCP tool results within the output budget${stack.ok ? '' : ` [skipped: ${stack.reason}]`}`,
  () => {
    if (requiredButMissing(stack)) return;
    for (const identity of identities().filter((i) => i.key === 'root' || i.key === 'unprivileged')) {
      describe.skipIf(identity.skip !== undefined)(asIdentityTitle(identity), () => {
        let run: McpRun | undefined;
        let big: BigDirectory;
        beforeAll(async () => {
          run = await runMcpHarness(identity.uid, ['big-directory']);
          big = run.output.results['big-directory'] as unknown as BigDirectory;
          if (big.crashed) throw new Error(`big-directory crashed: ${big.crashed.message}`);
        }, 300_000);
        afterAll(() => {
          if (run !== undefined) rmSync(run.base, { recursive: true, force: true });
        });

        it('list_directory of 20,000 long names answers in pages, each within the budget', () => {
          expect(big.pages).toHaveLength(3);
          for (const page of big.pages) {
            expect(page.isError).toBe(false);
            expect(page.count).toBeGreaterThan(0);
            expect(page.bytes).toBeLessThanOrEqual(BUDGET + 4096);
            expect(page).toMatchObject({ truncated: true, hasCursor: true });
            expect(page.textTail).toMatch(
              /^… truncated after \d+ entries: call list_directory again with cursor "/,
            );
          }
          // The second and third pages go on where the one before stopped.
          expect(big.continuous).toBe(true);
          expect(big.firstNames).toBe(big.pages.reduce((n, p) => n + p.count, 0));
        });

        it('following the cursors gives every name once, in order', () => {
          expect(big.wholePages).toBe(20);
          expect(big.total).toBe(20_000);
          expect(big.unique).toBe(20_000);
          expect(big.sorted).toBe(true);
          expect(big.first).toMatch(/-00000$/);
          expect(big.last).toMatch(/-19999$/);
        });

        it('limit caps a page; a cursor the server never gave is refused, naming the argument', () => {
          expect(big.small).toEqual({ count: 10, truncated: true, hasCursor: true });
          const said = big.badCursor.text ?? big.badCursor.message ?? '';
          expect(said).toMatch(/cursor: .* is not a cursor list_directory gave/);
        });
      });
    }
  },
);
