import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  copyFileSync,
  existsSync,
  lstatSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { linuxStack, REQUIRED, requiredButMissing } from '../support.js';
import { ATTACKS, HOOK } from './after-run/cases.js';
import {
  type CliResult,
  type Ctx,
  chownR,
  fill,
  host,
  hostOk,
  makeCtx,
  removeInBackground,
  run,
  shown,
  startRun,
} from './after-run/world.js';
import { identities as allIdentities, asIdentityTitle } from './hosts.js';

/**
 * What a command leaves in the writable roots cannot act on the host (issue 23), attacked through the real
 * CLI as every identity of hosts.ts (root: the change journal; the others: the journal or the complete
 * walk, whichever their host allows). Each attack plants code git would run and the host runs its next git
 * command: the marker must not appear. Each has a control, for each uid: the host plants the same itself
 * and the marker does appear. Then set-id bits, symlinks leading out, a commit of everything after a plant,
 * the quarantine, and two races in bounded rounds.
 */
const stack = linuxStack();

/**
 * A run of a race either ran, or was refused before its command started because a protected path it had
 * opened was moved by the other run's check (the mount point is gone when the helper or bubblewrap mounts
 * it: fail closed, "run again").
 */
const ranOrRaced = (r: CliResult) =>
  r.json?.exitCode === 0 ||
  /"ALEPH_DRIVER_FAILED".*(changed while the sandbox was being set up|vanished or changed while the sandbox was set up)/.test(
    r.stdout,
  );
const identities = allIdentities();

describe.skipIf(!stack.ok && !stack.missing.some((m) => REQUIRED.has(m)))(
  `the check after the run, through the CLI${stack.ok ? '' : ` [skipped: ${stack.reason}]`}`,
  () => {
    requiredButMissing(stack);

    for (const identity of identities) {
      describe.skipIf(identity.skip !== undefined)(asIdentityTitle(identity), () => {
        let mountpoint = '';
        const made: string[] = [];
        const removals: Promise<void>[] = [];
        const ctxFor = () => {
          const ctx = makeCtx(identity, mountpoint);
          made.push(ctx.dir);
          return ctx;
        };
        beforeAll(() => {
          mountpoint = mkdtempSync(path.join(os.tmpdir(), 'aleph-e2e-after-run-checkout-'));
          chmodSync(mountpoint, 0o755);
        });
        // A case's world goes as soon as the case ends, while the next cases run (the 60,000 directories
        // take the filesystem many seconds to remove); the suite waits for every removal at its end.
        afterEach(() => {
          for (const d of made.splice(0)) removals.push(removeInBackground(d));
        });
        afterAll(async () => {
          for (const d of made.splice(0)) removals.push(removeInBackground(d));
          if (mountpoint !== '') removals.push(removeInBackground(mountpoint));
          const failed = (await Promise.allSettled(removals)).filter((r) => r.status === 'rejected');
          if (failed.length > 0) throw new Error(failed.map((r) => String(r.reason)).join('\n'));
        }, 600_000);
        const nextRuns = (ctx: Ctx, next: string[][]) =>
          next.map((argv) => `$ ${argv.join(' ')} -> ${JSON.stringify(host(ctx, argv))}`).join('\n');

        // The controls plant on the real host as the identity's uid, never through a simulated host's
        // launcher (`host` takes no wrap), so a simulated host (root on this host) would repeat root's
        // controls exactly, 60,000 directories included: they run once per uid, with the real host's
        // identities (root and uid 65534).
        if (identity.wrap.length === 0)
          describe('controls: each plant fires when the host makes it itself', () => {
            for (const c of ATTACKS)
              it(c.id, () => {
                const ctx = ctxFor();
                c.setup?.(ctx);
                hostOk(ctx, ['sh', '-c', fill(ctx, c.command)]);
                const ran = nextRuns(ctx, c.next);
                expect(existsSync(ctx.marker), `the trigger did not fire:\n${ran}`).toBe(true);
              }, 120_000);
          });

        describe('attacks: planted inside the sandbox, nothing fires on the host', () => {
          for (const c of ATTACKS)
            it(c.id, async () => {
              const ctx = ctxFor();
              c.setup?.(ctx);
              const r = await run(ctx, 'attack', fill(ctx, c.command));
              expect(r.json?.exitCode, shown(r)).toBe(0);
              expect(existsSync(ctx.marker), 'the command itself fired the trigger').toBe(false);
              for (const rel of c.quarantined ?? [])
                expect(r.json?.details?.quarantined ?? [], shown(r)).toContain(path.join(ctx.ws, rel));
              const ran = nextRuns(ctx, c.next);
              expect(existsSync(ctx.marker), `the host ran planted code:\n${ran}\n${shown(r)}`).toBe(false);
            }, 180_000);
        });

        it('a set-id file the command makes (or a hard link to one) keeps no set-id bit on the host', async () => {
          const ctx = ctxFor();
          copyFileSync('/usr/bin/id', path.join(ctx.ws, 'tool'));
          chownR(ctx, path.join(ctx.ws, 'tool'));
          chmodSync(path.join(ctx.ws, 'tool'), 0o4755);
          // Control: the set-id bit of the host's own copy acts for another user.
          const other = identity.uid === 0 ? 65534 : 65533;
          const control = host(ctx, [path.join(ctx.ws, 'tool'), '-u'], ctx.ws, other).out.trim();
          expect(control).toBe(String(identity.uid));
          const r = await run(
            ctx,
            'setid',
            'cp /usr/bin/id made; chmod 6755 made 2>/dev/null; ln tool linked; true',
          );
          expect(r.json?.exitCode, shown(r)).toBe(0);
          for (const f of ['made', 'linked', 'tool'])
            expect([f, statSync(path.join(ctx.ws, f)).mode & 0o6000]).toEqual([f, 0]);
          expect(r.json?.details?.setIdCleared ?? [], shown(r)).toEqual(
            expect.arrayContaining([expect.stringMatching(/\/(linked|tool)$/)]),
          );
          expect(host(ctx, [path.join(ctx.ws, 'linked'), '-u'], ctx.ws, other).out.trim()).toBe(
            String(other),
          );
        }, 120_000);

        it("a planted name hard-linked to the user's own file is set aside as a private copy: the user's file keeps its mode", async () => {
          const ctx = ctxFor();
          const script = '#!/bin/sh\necho build\n';
          writeFileSync(path.join(ctx.ws, 'build.sh'), script, { mode: 0o755 });
          chownR(ctx, path.join(ctx.ws, 'build.sh'));
          hostOk(ctx, ['git', 'add', 'build.sh']);
          hostOk(ctx, ['git', 'commit', '-qm', 'build']);
          const r = await run(ctx, 'hardlink', 'ln build.sh .npmrc');
          expect(r.json?.exitCode, shown(r)).toBe(0);
          const q = r.json?.details?.quarantine?.find((e) => e.path === path.join(ctx.ws, '.npmrc'));
          expect(q, shown(r)).toBeDefined();
          const copy = statSync(q?.movedTo ?? '');
          expect([copy.mode & 0o7777, copy.nlink]).toEqual([0o600, 1]);
          expect(readFileSync(q?.movedTo ?? '', 'utf8')).toBe(script);
          const mine = statSync(path.join(ctx.ws, 'build.sh'));
          expect([mine.mode & 0o7777, mine.nlink]).toEqual([0o755, 1]);
          expect(existsSync(path.join(ctx.ws, '.npmrc'))).toBe(false);
          expect(hostOk(ctx, ['git', 'status', '--porcelain'])).toBe('');
        }, 120_000);

        it('symlinks leading out of the workspace are reported; those inside are not; none is removed', async () => {
          const ctx = ctxFor();
          const r = await run(
            ctx,
            'links',
            'ln -s /etc/passwd notes.md && ln -s ../../.. up && ln -s README.md readme',
          );
          // In the order the check found them (the journal's order of events, or the walk's).
          const byPath = (a: { path: string }, b: { path: string }) => (a.path < b.path ? -1 : 1);
          expect([...(r.json?.details?.symlinksOut ?? [])].sort(byPath), shown(r)).toEqual([
            { path: path.join(ctx.ws, 'notes.md'), target: '/etc/passwd', leads: 'outside' },
            { path: path.join(ctx.ws, 'up'), target: '../../..', leads: 'outside' },
          ]);
          expect(lstatSync(path.join(ctx.ws, 'notes.md')).isSymbolicLink()).toBe(true);
        }, 120_000);

        it("after a plant, the host's `git add -A && git commit` commits nothing planted, and the quarantine is outside the repository, not executable, one copy per path", async () => {
          const ctx = ctxFor();
          const plant = (n: string) =>
            `mkdir -p .claude && echo ${n} > .claude/settings.json && echo "registry=http://127.0.0.1:9/" > .npmrc && ${HOOK.replace('{T}', ctx.trigger)} > .git/hooks/x 2>/dev/null; echo "[core]\n\tfsmonitor = ${ctx.trigger}" > .git/config.worktree 2>/dev/null; true`;
          const first = await run(ctx, 'commit', plant('first'));
          const second = await run(ctx, 'commit', plant('second'));
          expect(second.json?.exitCode, shown(second)).toBe(0);
          hostOk(ctx, ['git', 'add', '-A']);
          hostOk(ctx, ['git', 'commit', '-qm', 'after', '--allow-empty']);
          expect(hostOk(ctx, ['git', 'show', '--name-only', '--format=', 'HEAD'])).toBe('');
          expect(hostOk(ctx, ['find', '.', '-name', '*aleph*', '-not', '-path', './.git/objects/*'])).toBe(
            '',
          );
          const moved = second.json?.details?.quarantine ?? [];
          expect(
            moved.map((q) => q.path),
            shown(second),
          ).toEqual(expect.arrayContaining([path.join(ctx.ws, '.claude'), path.join(ctx.ws, '.npmrc')]));
          for (const q of moved) {
            expect(q.movedTo.startsWith(path.join(ctx.home, '.aleph', 'quarantine'))).toBe(true);
            expect(first.json?.details?.quarantine?.map((e) => e.movedTo)).toContain(q.movedTo);
          }
          const settings = path.join(
            moved.find((q) => q.path.endsWith('.claude'))?.movedTo ?? '',
            'settings.json',
          );
          expect(spawnSync('cat', [settings], { encoding: 'utf8' }).stdout).toBe('second\n');
          expect(statSync(settings).mode & 0o7777).toBe(0o600);
          expect(readdirSync(path.dirname(settings))).toEqual(['settings.json']);
        }, 120_000);

        it('git clean -fdx and a dotfile glob succeed in a repository with every default protected path missing: no placeholder is in the way', async () => {
          const ctx = ctxFor();
          hostOk(ctx, ['rm', '-rf', '.git/hooks', '.git/info', '.git/config']);
          const protectedNames = ['.claude', '.codex', '.cursor', '.envrc', '.mcp.json', '.npmrc', '.vscode'];
          expect(protectedNames.filter((n) => existsSync(path.join(ctx.ws, n)))).toEqual([]);
          const r = await run(
            ctx,
            'clean',
            [
              'mkdir -p tmpdir node_modules && touch tmpdir/a scratch.txt node_modules/m.js .scratch',
              'git clean -fdxq',
              'ls -A',
              // `prettier --check .`-style: every file the glob finds, dotfiles included, is read.
              'for f in .[!.]* *; do if [ -f "$f" ]; then cat "$f" >/dev/null || exit 9; fi; done',
              'echo glob-ok',
            ].join(' && '),
          );
          expect(r.json?.exitCode, shown(r)).toBe(0);
          expect(r.json?.stdout, shown(r)).toBe('.git\nREADME.md\nglob-ok\n');
          expect(readdirSync(ctx.ws).sort()).toEqual(['.git', 'README.md']);
          // The window this leaves (a host process reading a missing protected path during the run) is
          // declared where there are read-only mounts; tier 3 declares its own, wider one.
          const gaps = (r.json?.details?.notEnforced ?? []).map((g) => g.slice(0, g.indexOf(':')));
          expect(gaps, shown(r)).toContain(
            r.json?.details?.tier === 'direct'
              ? 'protected-paths-during-run'
              : 'absent-protected-paths-during-run',
          );
        }, 120_000);

        it('without --json, the CLI says on stderr what the check after the run did', async () => {
          const ctx = ctxFor();
          const r = await startRun(ctx, 'stderr', 'echo hi && mkdir .codex', false).done;
          expect(r.stdout).toBe('hi\n');
          expect(r.stderr).toMatch(/^aleph-sandbox: after the run: set aside .*\/\.codex \(moved to /m);
        }, 60_000);

        it('run A makes a repository while run B starts in the same workspace (5 rounds): nothing planted reaches host git', async () => {
          const ctx = ctxFor();
          hostOk(ctx, ['rm', '-rf', '.git']);
          let planted = 0;
          for (let round = 0; round < 5; round++) {
            const a = startRun(
              ctx,
              `race-a-${round}`,
              fill(
                ctx,
                `git init -q 2>/dev/null; git config core.fsmonitor {T}; ${HOOK} > .git/hooks/pre-commit; printf . > .git/commondir; true`,
              ),
            );
            const b = startRun(ctx, `race-b-${round}`, 'sleep 0.05; git status >/dev/null 2>&1; true');
            const [ra, rb] = await Promise.all([a.done, b.done]);
            expect([ranOrRaced(ra), ranOrRaced(rb)], `${shown(ra)}\n${shown(rb)}`).toEqual([true, true]);
            planted += ra.json?.exitCode === 0 ? 1 : 0;
          }
          expect(planted, 'run A never ran').toBeGreaterThan(0);
          const ran = nextRuns(ctx, [
            ['git', 'status'],
            ['git', 'commit', '--allow-empty', '-qm', 'x'],
          ]);
          expect(existsSync(ctx.marker), `the host ran planted code:\n${ran}`).toBe(false);
        }, 300_000);

        it("two runs of one session at once, a .git appearing between the second one's cached plan and its start (5 rounds): nothing planted reaches host git", async () => {
          const ctx = ctxFor();
          hostOk(ctx, ['rm', '-rf', '.git']);
          // The session's plan is cached while there is no repository.
          expect((await run(ctx, 'same', 'true')).json?.exitCode).toBe(0);
          let planted = 0;
          for (let round = 0; round < 5; round++) {
            const a = startRun(
              ctx,
              'same',
              fill(
                ctx,
                `git init -q 2>/dev/null; git config core.fsmonitor {T}; ${HOOK} > .git/hooks/pre-commit; true`,
              ),
            );
            const b = startRun(
              ctx,
              'same',
              `sleep 0.0${round}; git config core.fsmonitor ${ctx.trigger} 2>/dev/null; true`,
            );
            const [ra, rb] = await Promise.all([a.done, b.done]);
            expect([ranOrRaced(ra), ranOrRaced(rb)], `${shown(ra)}\n${shown(rb)}`).toEqual([true, true]);
            planted += ra.json?.exitCode === 0 ? 1 : 0;
          }
          expect(planted, 'run A never ran').toBeGreaterThan(0);
          const ran = nextRuns(ctx, [
            ['git', 'status'],
            ['git', 'commit', '--allow-empty', '-qm', 'x'],
          ]);
          expect(existsSync(ctx.marker), `the host ran planted code:\n${ran}`).toBe(false);
        }, 300_000);
      });
    }
  },
);
