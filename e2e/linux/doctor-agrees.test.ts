import { spawnSync } from 'node:child_process';
import { chmodSync, chownSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliArgvAs, linuxStack, REQUIRED, requiredButMissing } from '../support.js';
import { asIdentityTitle, type Identity, identities } from './hosts.js';

/**
 * Doctor says what a run will do (issue 39 §8): for the same workspace, `doctor --json --workspace DIR`
 * reports the tier (`tierId`) and the gaps (`notEnforced`) that `run --json --workspace DIR` reports in
 * `details.tier` and `details.notEnforced`, and "ready" exactly when that run ran; doctor's default check
 * (no --workspace) agrees with a run in the default session workspace. For every simulated host (tier 1
 * as root, tier 2 as uid 65534 and as root without CAP_SYS_ADMIN, tier 3 without namespaces), on a disk
 * workspace and on a tmpfs one (the filesystem decides the tier a root run gets).
 */
const stack = linuxStack();
const root = process.getuid?.() === 0;

interface Seen {
  doctor: { available: boolean; tierId?: string; notEnforced?: string[]; problems?: string[] };
  run: { exitCode: number | null; details?: { tier?: string; notEnforced?: string[] } };
}

describe.runIf(stack.ok || REQUIRED.size > 0)(
  `doctor reports the tier and gaps a run gets${stack.ok ? '' : ` [skipped: ${stack.reason}]`}`,
  () => {
    if (requiredButMissing(stack)) return;
    let base = '';
    let tmpfs = '';
    beforeAll(() => {
      base = mkdtempSync(path.join(os.tmpdir(), 'aleph-e2e-doctor-'));
      chmodSync(base, 0o755);
      // Where cliArgvAs binds the checkout for another uid: empty, reachable.
      mkdirSync(path.join(base, 'checkout'), { mode: 0o755 });
      if (root) {
        tmpfs = path.join(base, 'tmpfs');
        mkdirSync(tmpfs);
        const m = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=16m,mode=0777', 'aleph-e2e-doctor', tmpfs]);
        if (m.status !== 0) tmpfs = '';
      }
    });
    afterAll(() => {
      if (tmpfs !== '') spawnSync('umount', [tmpfs]);
      if (base !== '') rmSync(base, { recursive: true, force: true });
    });

    /** `doctor --json` and `run --json -- true` as `identity`, with `workspace` (or their defaults). */
    function both(identity: Identity, name: string, workspace: string | undefined): Seen {
      const dir = path.join(base, `${identity.key}-${name}`);
      const home = path.join(dir, 'home');
      mkdirSync(home, { recursive: true });
      if (identity.uid !== process.getuid?.()) chownSync(home, identity.uid, identity.uid);
      chmodSync(dir, 0o755);
      const ws = workspace === undefined ? [] : ['--workspace', workspace];
      const cli = (args: string[]) => {
        const [cmd, ...rest] = [
          ...identity.wrap,
          ...cliArgvAs(identity.uid, path.join(base, 'checkout'), args),
        ] as [string, ...string[]];
        const r = spawnSync(cmd, rest, {
          env: { PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin', HOME: home },
          cwd: dir,
          encoding: 'utf8',
          timeout: 120_000,
        });
        try {
          return JSON.parse(r.stdout);
        } catch {
          throw new Error(
            `${args.join(' ')}: exit ${r.status}: ${r.stdout.slice(0, 500)} ${r.stderr.slice(0, 2000)}`,
          );
        }
      };
      return {
        doctor: cli(['doctor', '--json', ...ws]),
        run: cli(['run', '--json', ...ws, '--', 'true']),
      };
    }

    function expectAgree(seen: Seen): void {
      expect(seen.doctor.available, JSON.stringify(seen.doctor.problems)).toBe(seen.run.exitCode === 0);
      expect(seen.doctor.tierId).toBe(seen.run.details?.tier);
      expect([...(seen.doctor.notEnforced ?? [])].sort()).toEqual(
        [...(seen.run.details?.notEnforced ?? [])].sort(),
      );
    }

    for (const identity of identities()) {
      describe.skipIf(identity.skip !== undefined)(asIdentityTitle(identity), () => {
        it('doctor --workspace DIR on a disk directory says what a run there gets', () => {
          const ws = path.join(base, `${identity.key}-disk-ws`);
          mkdirSync(ws, { recursive: true });
          if (identity.uid !== process.getuid?.()) chownSync(ws, identity.uid, identity.uid);
          const seen = both(identity, 'disk', ws);
          expect(seen.run.exitCode).toBe(0);
          expect(seen.run.details?.tier).toBe(identity.tier);
          expectAgree(seen);
        }, 240_000);

        it.skipIf(!root)(
          `doctor --workspace DIR on a tmpfs says what a run there gets${root ? '' : ' [skipped: mounting a tmpfs needs root]'}`,
          () => {
            if (tmpfs === '') throw new Error('could not mount a tmpfs for the test');
            const ws = path.join(tmpfs, identity.key);
            mkdirSync(ws, { recursive: true });
            if (identity.uid !== process.getuid?.()) chownSync(ws, identity.uid, identity.uid);
            expectAgree(both(identity, 'tmpfs', ws));
          },
          240_000,
        );

        it("doctor's default check agrees with a run in the default session workspace", () => {
          expectAgree(both(identity, 'default', undefined));
        }, 240_000);
      });
    }
  },
);
