import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { sessionKeyToFilename } from '@aleph/sandbox-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { linuxStack, REQUIRED, runHarness, tempDirs } from '../support.js';
import { identities } from './hosts.js';
import { attacker } from './swap-attacker.js';

/**
 * A protected `.git/hooks` moved for a moment at a time by a command of another sandbox: session A's
 * workspace holds session B's repository (a `--workspace` inside another one), and A exchanges B's
 * `.git/hooks` with a symlink to a decoy (renameat2 RENAME_EXCHANGE), holding the exchange 2 ms in every
 * 22, while B runs again and again writing `.git/hooks` and the symlink's name. Where the hooks directory
 * is mounted read-only (tiers 1 and 2) it is, during an exchange, under the symlink's name, which B's
 * writable workspace mount reaches. Whatever B wrote there must not be in the real hooks directory after
 * its run (the check after the run sets it aside), and the decoy stays untouched. On every host of tier 1
 * or 2 this machine can give (root, uid 65534, root without CAP_SYS_ADMIN), bounded in rounds. The control:
 * the hooks directory moved by the host to a name that is not protected takes the same write.
 */

const stack = linuxStack();
const tempDir = tempDirs();
const ROUNDS = 30;
/** Outcomes a run set up during an exchange may legitimately end with. */
const REFUSALS = new Set(['ALEPH_DRIVER_FAILED', 'ALEPH_INVALID_COMMAND', 'ALEPH_CAPABILITY_DENIED']);
const ORIGINAL = 'ORIGINAL-HOOK\n';

interface StepResult {
  id: string;
  exitCode?: number | null;
  stdout?: string;
  stderr?: string;
  error?: { code: string; message: string };
}

/** B's script: many writes of a hook, through the protected name and the name the hooks are moved to. */
const WRITES =
  'i=0; while [ $i -lt 4000 ]; do echo PWNED > evil-dir/marker; echo PWNED >> evil-dir/pre-commit; echo PWNED > .git/hooks/marker; i=$((i+1)); done 2>/dev/null; echo ran';

describe.skipIf(!stack.ok && !stack.missing.some((m) => REQUIRED.has(m)))(
  `a protected .git/hooks moved by another sandbox's command while the run writes it${stack.ok ? '' : ` [skipped: ${stack.reason}]`}`,
  () => {
    // Tiers 1 and 2: the hooks are mounted read-only. Tier 3 (no mount namespace) guards them with a
    // snapshot instead, a mechanism of its own with tests of its own (tier3-protected.test.ts).
    for (const host of identities().filter((h) => h.tier !== 'direct')) {
      describe.skipIf(host.skip !== undefined)(
        `as ${host.name}${host.skip === undefined ? '' : ` [skipped: ${host.skip}]`}`,
        () => {
          let proj = '';
          let decoy = '';
          let controlMarker = '';
          const results = new Map<string, StepResult>();

          beforeAll(async () => {
            const base = tempDir('aleph-hooks-race-');
            chmodSync(base, 0o755);
            const home = path.join(base, 'home');
            mkdirSync(home, { mode: 0o700 });
            chownSync(home, host.uid, host.uid);
            decoy = path.join(base, 'decoy');
            mkdirSync(decoy, { mode: 0o777 });
            chmodSync(decoy, 0o777);
            writeFileSync(path.join(decoy, 'decoy.txt'), 'DECOY\n', { mode: 0o666 });
            const root = path.join(base, 'workspaces');
            const atk = path.join(root, sessionKeyToFilename('atk'));
            proj = path.join(atk, 'proj');
            mkdirSync(path.join(proj, '.git', 'hooks'), { recursive: true, mode: 0o755 });
            writeFileSync(path.join(proj, '.git', 'hooks', 'pre-commit'), ORIGINAL);
            symlinkSync(decoy, path.join(proj, 'evil-dir'));
            spawnSync('chown', ['-hR', `${host.uid}:${host.uid}`, root]);
            const as = { uid: host.uid, mountpoint: path.join(base, 'repo'), wrap: host.wrap };
            const env = { ...process.env, HOME: home };
            const sh = (script: string) => ({
              program: 'sh',
              args: ['-c', script],
              capabilities: { spawnSubprocess: true },
            });
            const attack = await runHarness<StepResult>(
              {
                workspaceRoot: root,
                parallel: true,
                approve: 'none',
                spawnWithoutApproval: true,
                stopFile: `${atk}/.stop`,
                workspaces: { atk, vic: proj },
                steps: [
                  attacker('attacker', 'atk', {
                    actions: [
                      ['xchg', `${proj}/.git/hooks`, `${proj}/evil-dir`],
                      ['sleep', '0.002', ''],
                      ['xchg', `${proj}/.git/hooks`, `${proj}/evil-dir`],
                      ['sleep', '0.02', ''],
                    ],
                    stop: `${atk}/.stop`,
                    ready: `${atk}/.ready`,
                  }),
                  {
                    id: 'victim',
                    session: 'vic',
                    repeat: ROUNDS,
                    waitFor: `${atk}/.ready`,
                    command: sh(WRITES),
                  },
                ],
              },
              env,
              as,
            );
            for (const [id, r] of attack.results) results.set(id, r);
            // The control, after the attack: the hooks moved by the host to a name that is not protected.
            const hooks = path.join(proj, '.git', 'hooks');
            const moved = path.join(proj, 'ctl-hooks');
            renameSync(hooks, moved);
            const control = await runHarness<StepResult>(
              {
                workspaceRoot: root,
                approve: 'none',
                spawnWithoutApproval: true,
                workspaces: { vic: proj },
                steps: [
                  { id: 'control', session: 'vic', command: sh('echo PWNED > ctl-hooks/marker && echo ran') },
                ],
              },
              env,
              as,
            );
            results.set('control', control.results.get('control') as StepResult);
            controlMarker = existsSync(path.join(moved, 'marker'))
              ? readFileSync(path.join(moved, 'marker'), 'utf8')
              : '';
            rmSync(path.join(moved, 'marker'), { force: true });
            renameSync(moved, hooks);
          }, 300_000);

          it('the attacker really exchanged the hooks while the victims ran, and most victims ran', () => {
            const a = results.get('attacker');
            expect(a?.stdout ?? a?.error?.message).toMatch(/^swaps \d+/);
            const rounds = Array.from({ length: ROUNDS }, (_, k) => results.get(`victim#${k}`));
            expect(rounds.every((r) => r !== undefined)).toBe(true);
            for (const r of rounds as StepResult[])
              if (r.error !== undefined)
                expect([r.id, REFUSALS.has(r.error.code)], r.error.message).toEqual([r.id, true]);
            expect(
              rounds.filter((r) => r?.stdout === 'ran\n').length,
              JSON.stringify(rounds[0]),
            ).toBeGreaterThan(0);
          });

          it('the real hooks hold nothing the victims wrote, and the decoy is untouched', () => {
            // Back at its name (the attacker leaves the names as it found them): the original hook,
            // unchanged, unless a write reached it, when the check after that run set it aside.
            const hooks = path.join(proj, '.git', 'hooks');
            expect(lstatSync(path.join(proj, 'evil-dir')).isSymbolicLink()).toBe(true);
            expect(lstatSync(hooks).isDirectory()).toBe(true);
            expect(readdirSync(hooks).filter((n) => n !== 'pre-commit')).toEqual([]);
            if (existsSync(path.join(hooks, 'pre-commit')))
              expect(readFileSync(path.join(hooks, 'pre-commit'), 'utf8')).toBe(ORIGINAL);
            expect(readdirSync(decoy)).toEqual(['decoy.txt']);
            expect(readFileSync(path.join(decoy, 'decoy.txt'), 'utf8')).toBe('DECOY\n');
          });

          it('control: the same write lands in the hooks directory moved by the host to a name that is not protected', () => {
            expect(results.get('control')?.stdout, JSON.stringify(results.get('control'))).toBe('ran\n');
            expect(controlMarker).toBe('PWNED\n');
          });
        },
      );
    }
  },
);
