import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { canSwitchUid, linuxStack, nodeArgvAs, REQUIRED, requiredButMissing } from '../support.js';
import { ATTACKS } from './after-run/cases.js';
import {
  type Ctx,
  chownR,
  fill,
  host,
  hostEnv,
  hostOk,
  makeCtx,
  removeInBackground,
} from './after-run/world.js';
import { UNPRIVILEGED } from './hosts.js';

/**
 * The change watcher of an unprivileged host (issue 38 §5; native/linux/watcher): the fork server keeps
 * fanotify inode marks on every directory of a workspace between runs, so the check after a run costs what
 * the run changed. Every plant of after-run.test.ts, and the plants only marks could miss (a directory made,
 * planted in and moved under a marked one before the watcher saw it; a tree moved; a flood of events that
 * overflows the watcher's queue; a known repository's config rewritten in place through a shared mapping;
 * two runs at once), is made as uid 65534 in runs checked by the watcher's journal (`afterRun.method`), in
 * one driver (watcher-harness.mjs), and the host's next git command must not run it. The controls plant the
 * same on the host itself, and the trigger fires.
 */
const stack = linuxStack();

interface Step {
  ws: string;
  command: string;
  ready?: boolean;
  with?: number[];
  delay?: number;
}
interface StepResult {
  step: number;
  tries: number;
  exitCode: number;
  stderr: string;
  afterRun?: { method: string; walked?: string[] };
  quarantined: string[];
  symlinksOut: { path: string; target: string }[];
}

/** A repository config of a fixed length, padded, so a shared mapping can rewrite it in place. */
const PADDED = (body: string) => `${body}${'#'.repeat(400 - body.length - 1)}\n`;
const MMAP_REWRITE = (file: string) =>
  `python3 -c "import mmap,sys; f=open('${file}','r+b'); m=mmap.mmap(f.fileno(),0); b=open('new.cfg','rb').read(); m[:len(b)]=b; m.flush(); m.close(); f.close()"`;

const MERGE_LOOP = `python3 -c 'import os, time
for i in range(10):
    os.makedirs("H/b%d/c" % i); os.rename("H/b%d" % i, "G/a%d" % i); os.rename("G/a%d" % i, "H/b%d" % i); time.sleep(0.005)'`;
const MERGE_PLANT = Array.from(
  { length: 10 },
  (_, i) => `git init -q H/b${i}/c/r && git -C H/b${i}/c/r config core.fsmonitor {T}`,
).join(' && ');
const RENAMED_PLANT = 'git init -q y/b/c/r && git -C y/b/c/r config core.fsmonitor {T}';
const UNREADABLE_PLANT = 'git init -q e/r && git -C e/r config core.fsmonitor {T}';
const CHAIN_RENAMES =
  'perl -e \'rename "a","a2" or die; rename "a2/d","a2/e" or die; rename "a2/e","a2/f" or die; rename "a2/f","a2/e" or die; rename "a2","a3" or die\'';
const CHAIN_PLANT = 'git init -q a3/e/r && git -C a3/e/r config core.fsmonitor {T}';
const EPOCH_PLANT = 'touch x && git init -q keep/r && git -C keep/r config core.fsmonitor {T}';

interface Case {
  id: string;
  setup?: (ctx: Ctx) => void;
  command: string;
  next: string[][];
  quarantined?: string[];
  /** The run may overflow the watcher's queue: then it is walked, and says why. */
  flood?: boolean;
  /** The host's own plant for the control (default: `command`). */
  control?: string;
}

const WATCHER_CASES: Case[] = [
  {
    id: 'a directory made, planted in and moved under a marked directory at once',
    setup: (ctx) => hostOk(ctx, ['mkdir', '-p', 'old/deep/x']),
    command: 'mkdir t && git init -q t/r && git -C t/r config core.fsmonitor {T} && mv t old/deep/x/t2',
    next: [['git', '-C', 'old/deep/x/t2/r', 'status']],
    quarantined: ['old/deep/x/t2/r/.git/config'],
  },
  {
    id: 'a repository made in a marked directory, then that tree moved',
    setup: (ctx) => hostOk(ctx, ['mkdir', '-p', 'src/lib']),
    command: 'git init -q src/lib/r && git -C src/lib/r config core.fsmonitor {T} && mv src moved',
    next: [['git', '-C', 'moved/lib/r', 'status']],
    quarantined: ['moved/lib/r/.git/config'],
  },
  {
    id: "40,000 files (more events than the watcher's queue holds), then a plant",
    command: `python3 -c "import os; os.mkdir('f'); [open('f/%d' % i, 'w').close() for i in range(40000)]" && git init -q f2/r && git -C f2/r config core.fsmonitor {T}`,
    next: [['git', '-C', 'f2/r', 'status']],
    flood: true,
  },
  {
    id: "a known nested repository's config rewritten in place through a shared mapping",
    setup: (ctx) => {
      hostOk(ctx, ['git', 'init', '-q', '-b', 'main', 'sub/r']);
      writeFileSync(
        path.join(ctx.ws, 'sub/r/.git/config'),
        PADDED('[core]\n\trepositoryformatversion = 0\n'),
      );
      writeFileSync(path.join(ctx.ws, 'new.cfg'), `[core]\n\tfsmonitor = ${ctx.trigger}\n#`);
      chownR(ctx, ctx.dir);
    },
    command: MMAP_REWRITE('sub/r/.git/config'),
    next: [['git', '-C', 'sub/r', 'status']],
    quarantined: ['sub/r/.git/config'],
  },
];

const unprivileged = {
  key: 'unprivileged',
  name: `uid ${UNPRIVILEGED}`,
  uid: UNPRIVILEGED,
  tier: 'user-namespace',
  wrap: [],
  skip: undefined,
} as const;

describe.skipIf(!stack.ok && !stack.missing.some((m) => REQUIRED.has(m)))(
  `the change watcher, as uid ${UNPRIVILEGED}${stack.ok ? '' : ` [skipped: ${stack.reason}]`}`,
  () => {
    requiredButMissing(stack);
    const switchable = canSwitchUid();
    let mountpoint = '';
    const made: string[] = [];
    const ctxs = new Map<string, Ctx>();
    let results: StepResult[] = [];
    const stepOf = new Map<string, number>();
    let concurrent: { a: number; b: number; ctx: Ctx } | undefined;
    let symlink: { step: number; ctx: Ctx } | undefined;
    let removal = -1;
    let merged: { ctx: Ctx; step: number } | undefined;
    let renamed: { ctx: Ctx; step: number } | undefined;
    let unreadable: { ctx: Ctx; step: number } | undefined;
    let chain: { ctx: Ctx; step: number } | undefined;
    let epochs: { ctx: Ctx; step: number } | undefined;
    let after: { step: number; ctx: Ctx } | undefined;
    let out = '';

    beforeAll(() => {
      if (!switchable) return;
      mountpoint = mkdtempSync(path.join(os.tmpdir(), 'aleph-e2e-watcher-checkout-'));
      chmodSync(mountpoint, 0o755);
      const state = mkdtempSync(path.join(os.tmpdir(), 'aleph-e2e-watcher-state-'));
      made.push(state);
      const steps: Step[] = [];
      const fresh = () => {
        const ctx = makeCtx(unprivileged, mountpoint);
        made.push(ctx.dir);
        return ctx;
      };
      for (const c of [...ATTACKS, ...WATCHER_CASES] as Case[]) {
        const ctx = fresh();
        c.setup?.(ctx);
        ctxs.set(c.id, ctx);
        stepOf.set(c.id, steps.length);
        steps.push({ ws: ctx.ws, command: fill(ctx, c.command), ready: true });
        if (c.flood) {
          // After lost events the watcher marks the tree again; the next plant is checked by it once ready.
          stepOf.set(`${c.id} (after)`, steps.length);
          steps.push({
            ws: ctx.ws,
            command: fill(ctx, 'git init -q g/r && git -C g/r config core.fsmonitor {T}'),
            ready: true,
          });
          after = { step: steps.length - 1, ctx };
        }
      }
      const both = fresh();
      concurrent = { a: steps.length, b: steps.length + 1, ctx: both };
      steps.push({
        ws: both.ws,
        command: fill(both, 'sleep 1; git init -q c1/r && git -C c1/r config core.fsmonitor {T}'),
        ready: true,
        with: [steps.length + 1],
      });
      steps.push({ ws: both.ws, command: 'mkdir -p other && echo x > other/f' });
      const links = fresh();
      symlink = { step: steps.length, ctx: links };
      hostOk(links, ['mkdir', '-p', 'old/in']);
      steps.push({
        ws: links.ws,
        command:
          'mkdir -p d/e && ln -s /etc/passwd d/e/notes.md && ln -s .. d/inside && mkdir -p old/in && ln -s ../../.. old/in/up',
        ready: true,
      });
      // Merged events (found by an attack round): a directory made, moved away and back, whose two events
      // the kernel folds, while the watcher is busy marking another workspace; then a plant inside it.
      merged = { ctx: fresh(), step: -1 };
      hostOk(merged.ctx, ['mkdir', 'H', 'G']);
      const busy = fresh();
      spawnSync('python3', [
        '-c',
        `import os\nfor i in range(200):\n  for j in range(100): os.makedirs('${busy.ws}/b/%d/%d' % (i, j))`,
      ]);
      chownR({ identity: unprivileged }, busy.ws);
      steps.push({ ws: busy.ws, command: 'true', with: [steps.length + 1] });
      steps.push({ ws: merged.ctx.ws, command: MERGE_LOOP, ready: true, delay: 150 });
      merged.step = steps.length;
      steps.push({ ws: merged.ctx.ws, command: fill(merged.ctx, MERGE_PLANT) });
      // Older events of an entry are not a later run's (found by an attack round): while a long run keeps the
      // log, run A makes x and moves it to keep; run B makes a file x and plants in keep.
      epochs = { ctx: fresh(), step: -1 };
      const idle = fresh();
      steps.push({
        ws: idle.ws,
        command: 'sleep 5',
        ready: true,
        with: [steps.length + 1, steps.length + 2],
      });
      steps.push({ ws: epochs.ctx.ws, command: 'mkdir x && mv x keep', ready: true, delay: 500 });
      epochs.step = steps.length;
      steps.push({ ws: epochs.ctx.ws, command: fill(epochs.ctx, EPOCH_PLANT), delay: 2500 });
      // A directory moved into one that is then renamed (its event names a place that is stale when read):
      // the next run's plant below it is caught (found in review).
      renamed = { ctx: fresh(), step: -1 };
      hostOk(renamed.ctx, ['mkdir', '-p', 'a/b/c', 'x']);
      steps.push({ ws: renamed.ctx.ws, command: 'mv a/b x/b && mv x y', ready: true });
      renamed.step = steps.length;
      steps.push({ ws: renamed.ctx.ws, command: fill(renamed.ctx, RENAMED_PLANT) });
      // A directory moved while unreadable, and a chain of renames read in one drain while the watcher is
      // busy elsewhere (second attack round): the next plant below each is caught.
      unreadable = { ctx: fresh(), step: -1 };
      hostOk(unreadable.ctx, ['mkdir', '-p', 'd/keep']);
      steps.push({
        ws: unreadable.ctx.ws,
        command: 'chmod 0 d && mv d e && sleep 1 && chmod 755 e',
        ready: true,
      });
      unreadable.step = steps.length;
      steps.push({ ws: unreadable.ctx.ws, command: fill(unreadable.ctx, UNREADABLE_PLANT), ready: true });
      chain = { ctx: fresh(), step: -1 };
      hostOk(chain.ctx, ['mkdir', '-p', 'a/d/keep']);
      const busy2 = fresh();
      spawnSync('python3', [
        '-c',
        `import os\nfor i in range(200):\n  for j in range(100): os.makedirs('${busy2.ws}/b/%d/%d' % (i, j))`,
      ]);
      chownR({ identity: unprivileged }, busy2.ws);
      steps.push({ ws: busy2.ws, command: 'sleep 1', with: [steps.length + 1] });
      steps.push({ ws: chain.ctx.ws, command: CHAIN_RENAMES, ready: true, delay: 300 });
      chain.step = steps.length;
      steps.push({ ws: chain.ctx.ws, command: fill(chain.ctx, CHAIN_PLANT), ready: true });
      removal = steps.length;
      steps.push({ ws: links.ws, command: 'rm -rf old d && mkdir -p n/m && rm -rf n' });
      chownR({ identity: unprivileged }, state);
      const argv = nodeArgvAs(UNPRIVILEGED, mountpoint, 'e2e/linux/watcher-harness.mjs');
      const r = spawnSync(argv[0] as string, argv.slice(1), {
        input: JSON.stringify({ stateDir: state, steps }),
        env: { ...hostEnv(both), HOME: both.home },
        encoding: 'utf8',
        timeout: 900_000,
        maxBuffer: 1 << 26,
      });
      out = `${r.stdout}\n${r.stderr}`;
      results = r.stdout
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as StepResult)
        .sort((x, y) => x.step - y.step);
    }, 1_200_000);

    afterAll(async () => {
      await Promise.allSettled(
        [...made, ...(mountpoint === '' ? [] : [mountpoint])].map((d) => removeInBackground(d)),
      );
    }, 600_000);

    const resultOf = (id: string) => {
      const r = results.find((x) => x.step === stepOf.get(id));
      expect(r, `no result for ${id}:\n${out.slice(-4000)}`).toBeDefined();
      return r as StepResult;
    };
    const marked = (r: StepResult) => `${JSON.stringify(r).slice(0, 3000)}`;

    describe.skipIf(!switchable)(
      `plants in runs the watcher checks: nothing fires on the host${switchable ? '' : ' [skipped: needs root and setpriv]'}`,
      () => {
        for (const c of [...ATTACKS, ...WATCHER_CASES] as Case[])
          it(c.id, () => {
            const ctx = ctxs.get(c.id) as Ctx;
            const r = resultOf(c.id);
            expect(r.exitCode, marked(r)).toBe(0);
            expect(r.tries, `the watcher never vouched for the workspace: ${marked(r)}`).toBeGreaterThan(0);
            if (c.flood && r.afterRun?.method === 'walk')
              expect(r.afterRun.walked?.join('\n'), marked(r)).toMatch(/change watcher lost events/);
            else expect(r.afterRun, marked(r)).toEqual({ method: 'journal' });
            for (const rel of c.quarantined ?? [])
              expect(r.quarantined, marked(r)).toContain(path.join(ctx.ws, rel));
            const ran = c.next.map((argv) => JSON.stringify(host(ctx, argv))).join('\n');
            expect(existsSync(ctx.marker), `the host ran planted code:\n${ran}\n${marked(r)}`).toBe(false);
          }, 120_000);

        it('after lost events the watcher marks the tree again, and its next plant is caught by it', () => {
          const a = after as { step: number; ctx: Ctx };
          const r = results.find((x) => x.step === a.step) as StepResult;
          expect(r?.afterRun, marked(r)).toEqual({ method: 'journal' });
          expect(r.quarantined, marked(r)).toContain(path.join(a.ctx.ws, 'g/r/.git/config'));
          host(a.ctx, ['git', '-C', 'g/r', 'status']);
          expect(existsSync(a.ctx.marker)).toBe(false);
        });

        it('two runs at once in one workspace: each is checked by the watcher, and the plant of one is caught', () => {
          const c = concurrent as { a: number; b: number; ctx: Ctx };
          const ra = results.find((x) => x.step === c.a) as StepResult;
          const rb = results.find((x) => x.step === c.b) as StepResult;
          expect([ra?.afterRun, rb?.afterRun], `${marked(ra)}\n${marked(rb)}`).toEqual([
            { method: 'journal' },
            { method: 'journal' },
          ]);
          expect(ra.quarantined, marked(ra)).toContain(path.join(c.ctx.ws, 'c1/r/.git/config'));
          expect(readFileSync(path.join(c.ctx.ws, 'other/f'), 'utf8')).toBe('x\n');
          host(c.ctx, ['git', '-C', 'c1/r', 'status']);
          expect(existsSync(c.ctx.marker)).toBe(false);
        });

        it('symlinks leading out, made in new and in marked directories, are reported once each', () => {
          const s = symlink as { step: number; ctx: Ctx };
          const r = results.find((x) => x.step === s.step) as StepResult;
          expect(r?.afterRun, marked(r)).toEqual({ method: 'journal' });
          expect(r.symlinksOut.map((l) => l.path).sort(), marked(r)).toEqual([
            path.join(s.ctx.ws, 'd/e/notes.md'),
            path.join(s.ctx.ws, 'old/in/up'),
          ]);
        });
      },
    );

    describe.skipIf(!switchable)(
      `found by an attack round${switchable ? '' : ' [skipped: needs root and setpriv]'}`,
      () => {
        it('a directory whose made, moved-away and moved-back events the kernel merged is still marked inside: a plant there is caught', () => {
          const m = merged as { ctx: Ctx; step: number };
          const r = results.find((x) => x.step === m.step) as StepResult;
          expect(r?.exitCode, marked(r)).toBe(0);
          for (let i = 0; i < 10; i++)
            expect(r.quarantined, marked(r)).toContain(path.join(m.ctx.ws, `H/b${i}/c/r/.git/config`));
          host(m.ctx, ['git', '-C', 'H/b5/c/r', 'status']);
          expect(existsSync(m.ctx.marker)).toBe(false);
        });

        it("an entry's events from before a run began are not that run's: a directory made and moved earlier does not hide a plant", () => {
          const e = epochs as { ctx: Ctx; step: number };
          const r = results.find((x) => x.step === e.step) as StepResult;
          expect([r?.exitCode, r?.afterRun], marked(r)).toEqual([0, { method: 'journal' }]);
          expect(r.quarantined, marked(r)).toContain(path.join(e.ctx.ws, 'keep/r/.git/config'));
          host(e.ctx, ['git', '-C', 'keep/r', 'status']);
          expect(existsSync(e.ctx.marker)).toBe(false);
        });

        it('a directory moved into one that is then renamed stays marked where it went: a later plant below it is caught', () => {
          const m = renamed as { ctx: Ctx; step: number };
          const r = results.find((x) => x.step === m.step) as StepResult;
          expect([r?.exitCode, r?.afterRun], marked(r)).toEqual([0, { method: 'journal' }]);
          expect(r.quarantined, marked(r)).toContain(path.join(m.ctx.ws, 'y/b/c/r/.git/config'));
          host(m.ctx, ['git', '-C', 'y/b/c/r', 'status']);
          expect(existsSync(m.ctx.marker)).toBe(false);
        });

        for (const [title, pick, repo] of [
          ['a directory moved while unreadable', () => unreadable, 'e/r'],
          ['a chain of renames read in one drain while the watcher is busy elsewhere', () => chain, 'a3/e/r'],
        ] as const)
          it(`${title} is placed again, never taken for gone: the next plant below it is caught`, () => {
            const m = pick() as { ctx: Ctx; step: number };
            const r = results.find((x) => x.step === m.step) as StepResult;
            expect(r?.exitCode, marked(r)).toBe(0);
            expect(r.quarantined, marked(r)).toContain(path.join(m.ctx.ws, repo, '.git/config'));
            host(m.ctx, ['git', '-C', repo, 'status']);
            expect(existsSync(m.ctx.marker)).toBe(false);
          });

        it('controls: the same plants made by the host itself fire', () => {
          const m = makeCtx(unprivileged, mountpoint);
          const e = makeCtx(unprivileged, mountpoint);
          made.push(m.dir, e.dir);
          hostOk(m, ['mkdir', 'H', 'G']);
          hostOk(m, ['sh', '-c', MERGE_LOOP]);
          hostOk(m, ['sh', '-c', fill(m, MERGE_PLANT)]);
          host(m, ['git', '-C', 'H/b5/c/r', 'status']);
          expect(existsSync(m.marker)).toBe(true);
          const n = makeCtx(unprivileged, mountpoint);
          made.push(n.dir);
          hostOk(n, ['sh', '-c', 'mkdir -p a/b/c x && mv a/b x/b && mv x y']);
          hostOk(n, ['sh', '-c', fill(n, RENAMED_PLANT)]);
          host(n, ['git', '-C', 'y/b/c/r', 'status']);
          expect(existsSync(n.marker)).toBe(true);
          for (const [setup, plant, repo] of [
            ['mkdir -p d/keep && chmod 0 d && mv d e && chmod 755 e', UNREADABLE_PLANT, 'e/r'],
            [`mkdir -p a/d/keep && ${CHAIN_RENAMES}`, CHAIN_PLANT, 'a3/e/r'],
          ] as const) {
            const c = makeCtx(unprivileged, mountpoint);
            made.push(c.dir);
            hostOk(c, ['sh', '-c', setup]);
            hostOk(c, ['sh', '-c', fill(c, plant)]);
            host(c, ['git', '-C', repo, 'status']);
            expect([repo, existsSync(c.marker)]).toEqual([repo, true]);
          }
          hostOk(e, ['sh', '-c', 'mkdir x && mv x keep']);
          hostOk(e, ['sh', '-c', fill(e, EPOCH_PLANT)]);
          host(e, ['git', '-C', 'keep/r', 'status']);
          expect(existsSync(e.marker)).toBe(true);
        }, 120_000);
      },
    );

    describe.skipIf(!switchable)(`removals${switchable ? '' : ' [skipped: needs root and setpriv]'}`, () => {
      it('a removed tree (directories deleted beneath deleted directories) is checked by the watcher, not walked', () => {
        const r = results.find((x) => x.step === removal) as StepResult;
        expect([r?.exitCode, r?.afterRun], marked(r)).toEqual([0, { method: 'journal' }]);
        expect(existsSync(path.join((symlink as { ctx: Ctx }).ctx.ws, 'old'))).toBe(false);
      });
    });

    describe.skipIf(!switchable)(
      `controls: the same plants made by the host itself fire${switchable ? '' : ' [skipped: needs root and setpriv]'}`,
      () => {
        for (const c of WATCHER_CASES)
          it(c.id, () => {
            const ctx = makeCtx(unprivileged, mountpoint);
            made.push(ctx.dir);
            c.setup?.(ctx);
            hostOk(ctx, ['sh', '-c', fill(ctx, c.control ?? c.command)]);
            const ran = c.next.map((argv) => JSON.stringify(host(ctx, argv))).join('\n');
            expect(existsSync(ctx.marker), `the trigger did not fire:\n${ran}`).toBe(true);
          }, 120_000);
      },
    );
  },
);
