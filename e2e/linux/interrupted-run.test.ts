import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { cliArgvAs, linuxStack, REQUIRED, requiredButMissing } from '../support.js';
import {
  type Ctx,
  fill,
  host,
  hostEnv,
  hostOk,
  makeCtx,
  removeInBackground,
  run,
  shown,
  startRun,
} from './after-run/world.js';
import { identities as allIdentities, asIdentityTitle } from './hosts.js';

/**
 * A run killed whole — SIGKILL to every process of it at once (the CLI, the launcher, both bwraps, the
 * command), as the OOM killer, a container's kill after its grace period or a host crash does — has no
 * check after it; what its command planted must still not stay for the host: the next run finds its record
 * unlocked under `~/.aleph/run` (native/linux/launcher/inflight.c), checks for it before it starts, and
 * reports what it set aside in `details.interruptedRun`. The control removes the record between the kill
 * and the next run: the plants survive and the host's next git command runs the planted code. As root and
 * as uid 65534, on the real host.
 */
const stack = linuxStack();
const identities = allIdentities().filter((i) => i.wrap.length === 0);

const PLANT =
  'git init -q k3 && git -C k3 config core.fsmonitor {T} && printf "[core]\\n\\tpager = \\"{T}; cat\\"\\n" >> k3/.git/config && echo x > .envrc; sleep 60';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The pids of PID's tree, PID first (by the parent pid each /proc/PID/stat names). */
function tree(pid: number): number[] {
  const children = new Map<number, number[]>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(name)]);
    } catch {}
  }
  const out = [pid];
  for (let i = 0; i < out.length; i++) out.push(...(children.get(out[i] as number) ?? []));
  return out;
}

/** Starts the planting run, waits (bounded) until it has planted, and SIGKILLs its whole tree at once. */
async function plantAndKill(ctx: Ctx): Promise<number[]> {
  const started = startRun(ctx, 'killed', fill(ctx, PLANT));
  const envrc = path.join(ctx.ws, '.envrc');
  for (let i = 0; i < 1200 && !existsSync(envrc); i++) await sleep(50);
  if (!existsSync(envrc)) throw new Error(`the command did not plant: ${JSON.stringify(await started.done)}`);
  const pids = tree(started.child.pid as number);
  // Stopped first, so that none sees another die and cleans up (the launcher would run its check).
  // A process of the tree that ended between the listing and the signal (ESRCH) is already gone.
  const signal = (p: number, sig: NodeJS.Signals) => {
    try {
      process.kill(p, sig);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ESRCH') throw e;
    }
  };
  for (const p of pids) signal(p, 'SIGSTOP');
  for (const p of pids) signal(p, 'SIGKILL');
  const r = await started.done;
  expect(r.status, 'the CLI was killed').toBeNull();
  for (let i = 0; i < 400 && pids.some((p) => existsSync(`/proc/${p}`)); i++) await sleep(25);
  // The kernel drops the record's lock once the last descriptor of it is closed (the launcher's exit).
  const free = () =>
    records(ctx).every((n) => spawnSync('flock', ['-n', path.join(recordsDir(ctx), n), 'true']).status === 0);
  for (let i = 0; i < 400 && !free(); i++) await sleep(25);
  return pids;
}

const recordsDir = (ctx: Ctx) => path.join(ctx.home, '.aleph', 'run');

/** Sets `file`'s times 30 days back, as the identity (older than the default max_age_days of 14). */
function backdate(ctx: Ctx, file: string): void {
  hostOk(ctx, ['touch', '-h', '-d', '30 days ago', file]);
}

interface GcReport {
  removed: { kind: string; path: string; reason: string }[];
  keptRecords: { path: string; roots: string[] }[];
}

/** `aleph-sandbox gc --json [extra]` as the identity, in its HOME. */
function gcAs(ctx: Ctx, extra: string[] = []): GcReport {
  const [cmd, ...args] = [
    ...ctx.identity.wrap,
    ...cliArgvAs(ctx.identity.uid, ctx.mountpoint, ['gc', '--json', ...extra]),
  ] as [string, ...string[]];
  const r = spawnSync(cmd, args, { env: hostEnv(ctx), cwd: ctx.dir, encoding: 'utf8', timeout: 60_000 });
  if (r.status !== 0) throw new Error(`gc failed (${r.status}): ${r.stderr}`);
  return JSON.parse(r.stdout) as GcReport;
}
const records = (ctx: Ctx) => readdirSync(recordsDir(ctx)).filter((n) => n.startsWith('inflight-'));

describe.skipIf(!stack.ok && !stack.missing.some((m) => REQUIRED.has(m)))(
  `a run killed whole, checked for by the next run${stack.ok ? '' : ` [skipped: ${stack.reason}]`}`,
  () => {
    requiredButMissing(stack);

    for (const identity of identities) {
      describe.skipIf(identity.skip !== undefined)(asIdentityTitle(identity), () => {
        let mountpoint = '';
        const made: string[] = [];
        beforeAll(() => {
          mountpoint = mkdtempSync(path.join(os.tmpdir(), 'aleph-e2e-interrupted-checkout-'));
          chmodSync(mountpoint, 0o755);
        });
        afterEach(async () => {
          for (const d of made.splice(0)) await removeInBackground(d);
        });
        afterAll(() => {
          if (mountpoint !== '') rmSync(mountpoint, { recursive: true, force: true });
        });
        const ctxFor = () => {
          const ctx = makeCtx(identity, mountpoint);
          made.push(ctx.dir);
          return ctx;
        };

        it('the plants of a run SIGKILLed whole are set aside by the next run and reported as from the interrupted run', async () => {
          const ctx = ctxFor();
          await plantAndKill(ctx);
          expect(records(ctx)).toHaveLength(1);
          const r = await run(ctx, 'next', 'true');
          expect(r.json?.exitCode, shown(r)).toBe(0);
          const earlier = (
            r.json?.details as { interruptedRun?: { roots?: string[]; quarantined?: string[] } }
          )?.interruptedRun;
          expect(earlier?.roots, shown(r)).toEqual([ctx.ws]);
          expect(earlier?.quarantined, shown(r)).toEqual(
            expect.arrayContaining([path.join(ctx.ws, 'k3/.git/config'), path.join(ctx.ws, '.envrc')]),
          );
          expect(existsSync(path.join(ctx.ws, 'k3/.git/config'))).toBe(false);
          expect(existsSync(path.join(ctx.ws, '.envrc'))).toBe(false);
          expect(records(ctx)).toEqual([]);
          const next = host(ctx, ['git', '-C', 'k3', 'status']);
          expect(existsSync(ctx.marker), `the host ran planted code: ${next.out}`).toBe(false);
        }, 180_000);

        it('control: with its record removed, the plants of a run SIGKILLed whole survive the next run and fire on the host', async () => {
          const ctx = ctxFor();
          await plantAndKill(ctx);
          for (const n of records(ctx)) rmSync(path.join(recordsDir(ctx), n));
          const r = await run(ctx, 'next', 'true');
          expect(r.json?.exitCode, shown(r)).toBe(0);
          expect(r.json?.details, shown(r)).not.toHaveProperty('interruptedRun');
          expect(existsSync(path.join(ctx.ws, 'k3/.git/config'))).toBe(true);
          expect(existsSync(path.join(ctx.ws, '.envrc'))).toBe(true);
          const next = host(ctx, ['git', '-C', 'k3', 'status']);
          expect(existsSync(ctx.marker), `the planted code did not fire: ${next.out}`).toBe(true);
        }, 180_000);

        it("gc keeps a killed run's record while its root is there, however old; the next run still checks for it", async () => {
          const ctx = ctxFor();
          await plantAndKill(ctx);
          const [record] = records(ctx);
          backdate(ctx, path.join(recordsDir(ctx), record as string));
          const report = gcAs(ctx);
          expect(report.removed.map((e) => e.path)).not.toContain(
            path.join(recordsDir(ctx), record as string),
          );
          expect(report.keptRecords).toEqual([
            { path: path.join(recordsDir(ctx), record as string), roots: [ctx.ws] },
          ]);
          expect(records(ctx)).toEqual([record]);
          const r = await run(ctx, 'next', 'true');
          const earlier = (r.json?.details as { interruptedRun?: { quarantined?: string[] } })
            ?.interruptedRun;
          expect(earlier?.quarantined, shown(r)).toEqual(
            expect.arrayContaining([path.join(ctx.ws, '.envrc')]),
          );
          expect(existsSync(path.join(ctx.ws, '.envrc'))).toBe(false);
        }, 180_000);

        it('gc removes what is old (registries, tier caches, quarantined sessions, kept changes, a dead record whose root is gone) and keeps what is fresh', async () => {
          const ctx = ctxFor();
          await plantAndKill(ctx);
          const [record] = records(ctx);
          const state = recordsDir(ctx);
          const aleph = path.join(ctx.home, '.aleph');
          const ended = new Date(Date.now() - 30 * 86_400_000).toISOString();
          hostOk(ctx, [
            'sh',
            '-c',
            [
              `cd '${state}'`,
              'echo x > gitdirs-1-1 && echo x > gitdirs-1-2 && echo {} > tier-cache-old.json',
              'mkdir -p ../quarantine/old-session/k3 ../quarantine/new-session changes/old-run changes/new-run',
              'echo planted > ../quarantine/old-session/k3/config && echo planted > ../quarantine/new-session/x',
              `printf '{"endedAt":"${ended}"}' > changes/old-run/run.json`,
              `printf '{"endedAt":"${new Date().toISOString()}"}' > changes/new-run/run.json`,
            ].join(' && '),
          ]);
          for (const p of [
            'gitdirs-1-1',
            'tier-cache-old.json',
            '../quarantine/old-session',
            record as string,
          ])
            backdate(ctx, path.join(state, p));
          // The record's root still there: kept; a dry run removes nothing.
          const dry = gcAs(ctx, ['--dry-run']);
          expect(dry.removed.map((e) => path.relative(aleph, e.path)).sort()).toEqual(
            [
              'quarantine/old-session',
              'run/changes/old-run',
              'run/gitdirs-1-1',
              'run/tier-cache-old.json',
            ].sort(),
          );
          expect(existsSync(path.join(state, 'gitdirs-1-1'))).toBe(true);
          // Its root gone, the old record goes too.
          rmSync(ctx.ws, { recursive: true, force: true });
          const report = gcAs(ctx);
          expect(report.removed.map((e) => path.relative(aleph, e.path)).sort()).toEqual(
            [
              'quarantine/old-session',
              'run/changes/old-run',
              'run/gitdirs-1-1',
              'run/tier-cache-old.json',
              `run/${record}`,
            ].sort(),
          );
          expect(report.keptRecords).toEqual([]);
          for (const gone of [
            'gitdirs-1-1',
            'tier-cache-old.json',
            '../quarantine/old-session',
            'changes/old-run',
            record,
          ])
            expect(existsSync(path.join(state, gone as string)), gone).toBe(false);
          for (const kept of [
            'gitdirs-1-2',
            '../quarantine/new-session/x',
            'changes/new-run/run.json',
            'inflight.lock',
          ])
            expect(existsSync(path.join(state, kept)), kept).toBe(true);
        }, 180_000);
      });
    }
  },
);
