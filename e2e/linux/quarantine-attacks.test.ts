import { spawn } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { asUid, linuxStack, REQUIRED, requiredButMissing } from '../support.js';
import {
  type CliResult,
  type Ctx,
  chownR,
  host,
  makeCtx,
  removeInBackground,
  run,
  shown,
  startRun,
} from './after-run/world.js';
import { identities as allIdentities, asIdentityTitle } from './hosts.js';

/**
 * The quarantine acts only on what it opened, keeps nothing a command can still reach, and costs the
 * host no more than its budgets (issue 36), attacked through the real CLI as root and as uid 65534:
 * - two runs in one workspace, in bounded rounds: run A makes a new git directory (its hooks are set aside
 *   at A's end) while run B, inside that hooks directory (its working directory: a descriptor held across
 *   A's check), swaps a file for a symlink to a host file and a 0000 directory for a symlink to a host
 *   directory, and writes executables, until it ends: the host file's and directory's modes never change,
 *   and what the quarantine holds after A's check is unchanged by B;
 * - a sparse 16 MiB file hard-linked 16 times as the hooks of a new git directory costs the quarantine
 *   what it costs the workspace (one sparse copy), and a flood of dense hooks over the run's budget is not
 *   kept (removed all the same, and said so), the quarantine growing by less than the budget.
 * Controls: a chmod by name of the planted link changes the host file, and a process holding a directory
 * writes into it after the directory is renamed, when the host does both itself.
 */
const stack = linuxStack();
const ROUNDS = 3;

/**
 * Every entry below DIR (the quarantine root): its path relative to DIR, type and mode, and a file's content.
 * Each session's `.aleph-trash` is left out: what is set aside is renamed there first and removed once
 * copied, and a run holding a descriptor on it may write there until then; the copies are what is kept.
 */
function snapshot(dir: string): string[] {
  if (!existsSync(dir)) return [];
  const out: string[] = [];
  const walk = (d: string) => {
    for (const name of readdirSync(d).sort()) {
      if (name === '.aleph-trash' && path.dirname(d) === dir) continue;
      const p = path.join(d, name);
      const st = lstatSync(p);
      const rel = path.relative(dir, p);
      out.push(`${rel} ${st.mode.toString(8)} ${st.isFile() ? readFileSync(p, 'utf8').slice(0, 64) : ''}`);
      if (st.isDirectory()) walk(p);
    }
  };
  walk(dir);
  return out;
}

/** What the files below DIR cost the disk (st_blocks * 512), links of one inode counted once. */
function allocated(dir: string): number {
  if (!existsSync(dir)) return 0;
  const seen = new Set<string>();
  let total = 0;
  const walk = (d: string) => {
    for (const name of readdirSync(d)) {
      const p = path.join(d, name);
      const st = lstatSync(p, { bigint: false });
      const key = `${st.dev}:${st.ino}`;
      if (!seen.has(key)) total += st.blocks * 512;
      seen.add(key);
      if (st.isDirectory()) walk(p);
    }
  };
  walk(dir);
  return total;
}

/** Every regular file below DIR with an x or set-id bit (a symlink kept as evidence is not one). */
function executables(dir: string): string[] {
  return snapshot(dir)
    .map((l) => l.split(' ') as [string, string])
    .filter(
      ([rel, mode]) => lstatSync(path.join(dir, rel)).isFile() && (Number.parseInt(mode, 8) & 0o7111) !== 0,
    )
    .map(([rel]) => rel);
}

describe.skipIf(!stack.ok && !stack.missing.some((m) => REQUIRED.has(m)))(
  `the quarantine acts only on what it opened, within budgets${stack.ok ? '' : ` [skipped: ${stack.reason}]`}`,
  () => {
    requiredButMissing(stack);
    const mountpoint = mkdtempSync(path.join(os.tmpdir(), 'aleph-e2e-quarantine-checkout-'));
    chmodSync(mountpoint, 0o755);
    const made: string[] = [];
    afterAll(async () => {
      await Promise.all([...made, mountpoint].map((d) => removeInBackground(d)));
    }, 120_000);

    for (const identity of allIdentities()) {
      describe.skipIf(identity.skip !== undefined)(asIdentityTitle(identity), () => {
        const world = (config = '') => {
          const ctx = makeCtx(identity, mountpoint);
          made.push(ctx.dir);
          mkdirSync(path.join(ctx.home, '.aleph'), { mode: 0o700 });
          writeFileSync(path.join(ctx.home, '.aleph', 'config.toml'), config);
          // The host's own file and directory the attack aims at (the identity's, so a chmod would work).
          writeFileSync(path.join(ctx.dir, 'host-file'), '#!/bin/sh\n', { mode: 0o755 });
          mkdirSync(path.join(ctx.dir, 'host-dir'), { mode: 0o750 });
          chmodSync(path.join(ctx.dir, 'host-file'), 0o755);
          chmodSync(path.join(ctx.dir, 'host-dir'), 0o750);
          chownR(
            ctx,
            path.join(ctx.home, '.aleph'),
            path.join(ctx.dir, 'host-file'),
            path.join(ctx.dir, 'host-dir'),
          );
          return ctx;
        };
        const quarantine = (ctx: Ctx) => path.join(ctx.home, '.aleph', 'quarantine');
        const modes = (ctx: Ctx) => [
          statSync(path.join(ctx.dir, 'host-file')).mode & 0o7777,
          statSync(path.join(ctx.dir, 'host-dir')).mode & 0o7777,
        ];

        // The controls act on the real host as the identity's uid: once per uid (a simulated host is root).
        it.skipIf(identity.wrap.length > 0)(
          'control: a chmod by name of the planted link changes the host file; a held directory is written after a rename',
          () => {
            const ctx = world();
            const link = path.join(ctx.ws, 'link');
            host(ctx, ['ln', '-s', path.join(ctx.dir, 'host-file'), link]);
            expect(host(ctx, ['chmod', '600', link]).status).toBe(0);
            expect(modes(ctx)[0]).toBe(0o600);
            chmodSync(path.join(ctx.dir, 'host-file'), 0o755);
            mkdirSync(path.join(ctx.ws, 'held'));
            chownR(ctx, path.join(ctx.ws, 'held'));
            const [cmd, ...args] = asUid(identity.uid, [
              'sh',
              '-c',
              'cd held && sleep 0.5 && echo late > late && chmod +x late',
            ]) as [string, ...string[]];
            const holder = spawn(cmd, args, { cwd: ctx.ws, stdio: 'ignore' });
            return new Promise<void>((resolve, reject) => {
              setTimeout(() => renameSync(path.join(ctx.ws, 'held'), path.join(ctx.dir, 'moved')), 100);
              holder.on('error', reject);
              holder.on('close', () => {
                try {
                  expect(existsSync(path.join(ctx.dir, 'moved', 'late'))).toBe(true);
                  resolve();
                } catch (e) {
                  reject(e);
                }
              });
            });
          },
          60_000,
        );

        it(`two runs, ${ROUNDS} rounds: a symlink swapped in under the set-aside never changes a host mode; a descriptor held on a planted directory cannot reach its quarantined copy`, async () => {
          const ctx = world();
          const hostFile = path.join(ctx.dir, 'host-file');
          const hostDir = path.join(ctx.dir, 'host-dir');
          for (let round = 0; round < ROUNDS; round++) {
            const g = `g${round}`;
            // B: waits (bounded) for A's hooks directory, enters it and keeps swapping and writing there.
            const b = startRun(
              ctx,
              'race',
              [
                `i=0; while [ ! -d ${g}/.git/hooks ] && [ $i -lt 400 ]; do i=$((i+1)); sleep 0.01; done`,
                `cd ${g}/.git/hooks || exit 0`,
                'n=0',
                'while [ $n -lt 300 ]; do n=$((n+1))',
                `  ln -s '${hostFile}' x 2>/dev/null; rm -f x; true > x 2>/dev/null; rm -f x`,
                `  mkdir d 2>/dev/null && chmod 000 d && rmdir d; ln -s '${hostDir}' d 2>/dev/null; rm -f d`,
                `  printf '#!/bin/sh\\necho ran\\n' > late-$n 2>/dev/null && chmod 755 late-$n 2>/dev/null`,
                'done; true',
              ].join('\n'),
            );
            // A: makes the git directory, gives B time to enter it, and ends: its check sets the hooks aside.
            const a = await run(ctx, 'race', `git init -q ${g} && sleep 0.5`);
            expect(a.json?.exitCode, shown(a)).toBe(0);
            const after = snapshot(quarantine(ctx));
            const rb: CliResult = await b.done;
            expect(rb.json?.exitCode, shown(rb)).toBe(0);
            expect(modes(ctx), `round ${round}: a host mode changed`).toEqual([0o755, 0o750]);
            // B's own check may add to the quarantine; nothing it did reaches what A's check kept.
            const aKept = (s: string[]) =>
              s.filter((l) => l.includes(`${g}/.git/hooks/`) && !l.includes('late-'));
            const now = snapshot(quarantine(ctx));
            expect(aKept(after).length, shown(a)).toBeGreaterThan(0);
            for (const l of after) expect(now, `A's copy changed after its check: ${l}`).toContain(l);
            const late = now.filter((l) => /late-\d+ /.test(l) && !after.includes(l));
            expect(late, 'B wrote into the quarantine after A set the directory aside').toEqual([]);
          }
          expect(executables(quarantine(ctx)).join('\n'), 'an executable in the quarantine').toBe('');
        }, 600_000);

        it('a sparse 16 MiB file hard-linked 16 times as hooks costs the quarantine one sparse copy; dense hooks over the budget are not kept, and said so', async () => {
          const ctx = world('[sandbox.linux]\nquarantine_run_mb = 4\n');
          const before = allocated(quarantine(ctx));
          const sparse = await run(
            ctx,
            'flood',
            'git init -q s && cd s/.git/hooks && truncate -s 16M big && for i in $(seq 2 16); do ln big h$i; done',
          );
          expect(sparse.json?.exitCode, shown(sparse)).toBe(0);
          expect(sparse.json?.details?.quarantined ?? [], shown(sparse)).toContain(
            path.join(ctx.ws, 's/.git/hooks'),
          );
          expect(
            (sparse.json?.details as Record<string, unknown>)?.quarantineNotKept,
            shown(sparse),
          ).toBeUndefined();
          const grown = allocated(quarantine(ctx)) - before;
          expect(grown, 'the sparse, linked hooks cost the quarantine more than their blocks').toBeLessThan(
            1024 * 1024,
          );
          const dense = await run(
            ctx,
            'flood',
            'for k in 1 2 3; do git init -q d$k && head -c 3000000 /dev/urandom > d$k/.git/hooks/blob; done',
          );
          expect(dense.json?.exitCode, shown(dense)).toBe(0);
          const notKept = (dense.json?.details as Record<string, unknown>)?.quarantineNotKept as
            | string[]
            | undefined;
          expect(notKept ?? [], shown(dense)).toEqual(
            expect.arrayContaining([
              expect.stringMatching(/\/d\d\/\.git\/hooks: over the quarantine's budget for a run$/),
            ]),
          );
          for (const k of [1, 2, 3])
            expect(existsSync(path.join(ctx.ws, `d${k}/.git/hooks/blob`))).toBe(false);
          expect(allocated(quarantine(ctx)) - before - grown).toBeLessThan(4 * 1024 * 1024);
          expect(executables(quarantine(ctx)).join('\n')).toBe('');
        }, 180_000);
      });
    }
  },
);
