import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  canSwitchUid,
  type HarnessOutput,
  linuxStack,
  REQUIRED,
  requiredButMissing,
  runHarness,
} from '../support.js';

/**
 * A root host's helper makes the sandbox's /dev with mknod (native/linux/helper/devfs.c). A host whose runtime
 * drops CAP_MKNOD (or refuses device nodes) keeps tier 1: the helper's --probe finds mknod refused and
 * bwrap's --dev binds the host's nodes instead. Run as root with CAP_MKNOD taken out of the bounding set
 * (setpriv), against a control with it, each checked from inside the sandbox.
 */

const stack = linuxStack();
const root = process.getuid?.() === 0 && canSwitchUid();
const LIST = 'core fd full null ptmx pts random shm stderr stdin stdout tty urandom zero';

interface Step {
  id: string;
  exitCode?: number | null;
  stdout?: string;
  stderr?: string;
}
type Harnessed = HarnessOutput<Step>;

describe.runIf(stack.ok || REQUIRED.size > 0)(
  `/dev on a root host without CAP_MKNOD${stack.ok ? '' : ` [skipped: ${stack.reason}]`}${root ? '' : ' [skipped: needs root and setpriv]'}`,
  () => {
    if (requiredButMissing(stack)) return;
    if (!root) return;
    let base = '';
    const seen: Record<string, Harnessed> = {};
    const run = async (wrap: string[]): Promise<Harnessed> => {
      const plan = {
        workspaceRoot: path.join(base, `ws-${wrap.length}`),
        steps: [
          {
            id: 'dev',
            command: {
              program: 'sh',
              args: [
                '-c',
                'ls /dev | tr "\\n" " "; echo; echo x > /dev/null && head -c 4 /dev/zero | wc -c; grep ^CapBnd /proc/self/status',
              ],
              capabilities: { spawnSubprocess: true },
            },
          },
        ],
      };
      return (await runHarness<Step>(plan, { ...process.env, HOME: base }, { wrap })).output;
    };

    beforeAll(async () => {
      base = mkdtempSync(path.join(os.tmpdir(), 'aleph-e2e-devfb-'));
      seen.control = await run([]);
      seen.noMknod = await run(['setpriv', '--bounding-set', '-mknod', '--inh-caps', '-mknod']);
    }, 60_000);
    afterAll(() => {
      if (base !== '') rmSync(base, { recursive: true, force: true });
    });

    it.each(['control', 'noMknod'])(
      '%s: tier 1, the usual /dev, its devices work, no capability left',
      (k) => {
        const h = seen[k] as Harnessed;
        expect(h.tierId).toBe('namespaces');
        const step = h.results[0];
        expect(step?.exitCode, step?.stderr).toBe(0);
        expect((step?.stdout ?? '').split('\n')).toEqual([`${LIST} `, '4', 'CapBnd:\t0000000000000000', '']);
      },
    );
  },
);
