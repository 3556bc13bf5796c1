import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { canSwitchUid, linuxStack, REQUIRED, repoRoot, runAsync } from '../support.js';

/**
 * A root host's helper makes the sandbox's /dev with mknod (native/linux/devfs.c). A host whose runtime
 * drops CAP_MKNOD (or refuses device nodes) keeps tier 1: the helper's --probe finds mknod refused and
 * bwrap's --dev binds the host's nodes instead. Run as root with CAP_MKNOD taken out of the bounding set
 * (setpriv), against a control with it, each checked from inside the sandbox.
 */

const stack = linuxStack();
const root = process.getuid?.() === 0 && canSwitchUid();
const LIST = 'core fd full null ptmx pts random shm stderr stdin stdout tty urandom zero';

interface Harnessed {
  tierId: string;
  results: { id: string; exitCode?: number | null; stdout?: string; stderr?: string }[];
}

describe.runIf(stack.ok || REQUIRED.size > 0)(
  `/dev on a root host without CAP_MKNOD${stack.ok ? '' : ` [skipped: ${stack.reason}]`}${root ? '' : ' [skipped: needs root and setpriv]'}`,
  () => {
    if (!stack.ok) {
      it('the Linux stack is required here (ALEPH_REQUIRE) but missing', () => {
        throw new Error(`required by ALEPH_REQUIRE but unavailable: ${stack.reason}`);
      });
      return;
    }
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
      const r = await runAsync(
        wrap[0] ?? process.execPath,
        [
          ...wrap.slice(1),
          ...(wrap.length > 0 ? [process.execPath] : []),
          path.join(repoRoot, 'e2e/linux/harness.mjs'),
        ],
        { input: JSON.stringify(plan), env: { ...process.env, HOME: base } },
      );
      if (r.status !== 0) throw new Error(`harness failed (${r.status}): ${r.stderr}`);
      return JSON.parse(r.stdout) as Harnessed;
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
