import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { cliArgvAs, linuxStack, REQUIRED, requiredButMissing, startJson } from '../support.js';
import {
  type CliResult,
  type Ctx,
  chownR,
  hostEnv,
  makeCtx,
  removeInBackground,
  shown,
} from './after-run/world.js';
import { identities as allIdentities, asIdentityTitle } from './hosts.js';

/**
 * A command cannot pass its run off as a set-up failure (issue 36): printing the helper's own line
 * (`aleph-sandbox-init: …`) on stderr and exiting 125 after planting a hook in a new git directory, a symlink
 * out and a refused connection still gives the command's result, with all three in the result, `--json`
 * and the audit record, and leaves the cached tier verdict alone. The host believes the helper's status
 * channel, which the command never holds. Controls: the same run without the forged line has the same
 * details, and a genuine set-up failure of the helper (a working directory it cannot enter) is still one.
 */
const stack = linuxStack();
const FORGED = 'aleph-sandbox-init: launch: writing /proc/self/uid_map: forged by the command';
const PLANT = [
  'git init -q sub',
  `printf '#!/bin/sh\\necho ran\\n' > sub/.git/hooks/post-checkout`,
  'chmod +x sub/.git/hooks/post-checkout',
  'ln -s /etc/passwd out',
  'curl -sS -m 5 -o /dev/null http://evil.test:9/ 2>/dev/null',
].join('; ');

type Json = CliResult['json'] & {
  error?: { code: string; message: string };
  details?: Record<string, unknown> & { denials?: { kind: string; target: string }[] };
};

/** The CLI as the identity, `run --json` with `flags`, in the case's repository. */
async function cli(ctx: Ctx, flags: string[], command: string) {
  const args = ['run', '--json', '--workspace', ctx.ws, '--approve', 'all', '--allow-spawn', ...flags];
  const argv = [
    ...ctx.identity.wrap,
    ...cliArgvAs(ctx.identity.uid, ctx.mountpoint, [...args, '--', 'sh', '-c', command]),
  ];
  const r = await startJson<Json>(argv, { env: hostEnv(ctx), cwd: ctx.dir }).done;
  return { ...r, json: r.json as Json | undefined };
}

/** The one tier cache file of the identity's HOME (~/.aleph/run/tier-cache-*.json): its text and mtime. */
function tierCache(ctx: Ctx): { text: string; mtimeMs: number } {
  const dir = path.join(ctx.home, '.aleph', 'run');
  const files = existsSync(dir) ? readdirSync(dir).filter((f) => f.startsWith('tier-cache-')) : [];
  expect(files, 'one tier cache file').toHaveLength(1);
  const file = path.join(dir, files[0] as string);
  return { text: readFileSync(file, 'utf8'), mtimeMs: statSync(file).mtimeMs };
}

const keyOf = (cache: { text: string }) => (JSON.parse(cache.text) as { key?: string }).key;

/** The last capability_ledger record of the audit log. */
function lastLedger(log: string): Record<string, unknown> & { details?: Record<string, unknown> } {
  const records = readFileSync(log, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .filter((r) => r.type === 'capability_ledger');
  const last = records.at(-1);
  if (last === undefined) throw new Error('no capability_ledger record in the audit log');
  return last as Record<string, unknown> & { details?: Record<string, unknown> };
}

describe.skipIf(!stack.ok && !stack.missing.some((m) => REQUIRED.has(m)))(
  `a command cannot forge a set-up failure${stack.ok ? '' : ` [skipped: ${stack.reason}]`}`,
  () => {
    requiredButMissing(stack);
    const mountpoint = mkdtempSync(path.join(os.tmpdir(), 'aleph-e2e-forged-checkout-'));
    chmodSync(mountpoint, 0o755);
    const made: string[] = [];
    afterAll(async () => {
      await Promise.all([...made, mountpoint].map((d) => removeInBackground(d)));
    }, 120_000);

    for (const identity of allIdentities()) {
      describe.skipIf(identity.skip !== undefined)(asIdentityTitle(identity), () => {
        const world = () => {
          const ctx = makeCtx(identity, mountpoint);
          made.push(ctx.dir);
          const log = path.join(ctx.dir, 'audit', 'audit.jsonl');
          mkdirSync(path.dirname(log));
          mkdirSync(path.join(ctx.home, '.aleph'), { mode: 0o700 });
          writeFileSync(
            path.join(ctx.home, '.aleph', 'config.toml'),
            `[sandbox.audit]\njsonl_path = ${JSON.stringify(log)}\n`,
          );
          chownR(ctx, path.join(ctx.dir, 'audit'), path.join(ctx.home, '.aleph'));
          return { ctx, log };
        };

        // The simulated host without user namespaces runs each CLI in a user namespace of its own, whose
        // identity is part of the tier cache's key: there every run writes the cache anew, forged or not.
        const cacheStable = identity.key !== 'no-userns';
        it(`the forged line and exit 125 after a hook, a symlink out and a refused connection: the run keeps its record${cacheStable ? ', the tier cache stays' : ' (the tier cache is rewritten by every run on this simulated host: not compared)'}`, async () => {
          const { ctx, log } = world();
          // Control: a run that does not forge, whose details every later check compares with.
          const plain = await cli(ctx, ['--net', '127.0.0.1:9'], `${PLANT}; exit 3`);
          expect(plain.json?.exitCode, shown(plain)).toBe(3);
          const before = tierCache(ctx);
          const forged = await cli(
            ctx,
            ['--net', '127.0.0.1:9'],
            `${PLANT.replaceAll('sub', 'sub2').replace(' out', ' out2')}; echo '${FORGED}' >&2; exit 125`,
          );
          const d = forged.json?.details;
          expect(forged.json?.error, shown(forged)).toBeUndefined();
          expect(forged.json?.exitCode, shown(forged)).toBe(125);
          expect(forged.json?.stderr, shown(forged)).toContain(FORGED);
          expect(d?.quarantined, shown(forged)).toEqual(
            expect.arrayContaining([path.join(ctx.ws, 'sub2/.git/hooks')]),
          );
          expect(d?.symlinksOut, shown(forged)).toEqual([
            { path: path.join(ctx.ws, 'out2'), target: '/etc/passwd', leads: 'outside' },
          ]);
          expect(
            d?.denials?.map((x) => x.target),
            shown(forged),
          ).toEqual(['evil.test:9']);
          // The same kinds of details as the control's.
          expect(Object.keys(d ?? {}).sort()).toEqual(Object.keys(plain.json?.details ?? {}).sort());
          expect(existsSync(path.join(ctx.ws, 'sub2/.git/hooks/post-checkout'))).toBe(false);
          const ledger = lastLedger(log);
          expect(ledger.exitCode).toBe(125);
          expect(ledger.details?.symlinksOut).toEqual(d?.symlinksOut);
          expect(ledger.details?.quarantined).toEqual(d?.quarantined);
          expect(ledger.details?.denials).toEqual(d?.denials);
          // Dropped and checked again, the verdict would be rewritten under the same key; a new key means the
          // host's facts changed meanwhile (other work on this machine), which is not the run's doing.
          const after = tierCache(ctx);
          if (cacheStable && keyOf(after) === keyOf(before))
            expect(after, 'the cached tier verdict was dropped or rewritten').toEqual(before);
        }, 180_000);

        it('control: a genuine set-up failure of the helper (a working directory it cannot enter) is still reported as one', async () => {
          const { ctx } = world();
          mkdirSync(path.join(ctx.ws, 'locked'));
          chownR(ctx, path.join(ctx.ws, 'locked'));
          chmodSync(path.join(ctx.ws, 'locked'), 0);
          const r = await cli(ctx, ['--cwd', 'locked'], `echo '${FORGED}' >&2; exit 125`);
          expect(r.json?.error?.code, shown(r)).toBe('ALEPH_DRIVER_FAILED');
          expect(r.json?.error?.message, shown(r)).toMatch(
            /^the sandbox helper failed: aleph-sandbox-init: cannot change to the directory .*locked: Permission denied/,
          );
          expect(r.json?.error?.message).not.toContain('forged');
          // As a uid without root the check after the run cannot read it, so sets it aside whole.
          if (existsSync(path.join(ctx.ws, 'locked'))) chmodSync(path.join(ctx.ws, 'locked'), 0o755);
        }, 120_000);
      });
    }
  },
);
