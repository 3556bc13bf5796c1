import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sessionKeyToFilename } from '@aleph/sandbox-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REQUIRED, requiredButMissing } from '../support.js';
import { type Ctx, chownR, identities, makeCtx, run, shown, stack } from './host-next/world.js';

/**
 * Nothing inside a hidden path can be granted (issue 23 §6): an approved `--allow-write` or
 * `--allow-read` of a path inside (or equal to) another session's HOME, the vault, the audit log's
 * directory or `~/.aleph/run` is refused before anything runs, naming the grant and the hidden path, and
 * the command's plant is nowhere. Through the real CLI with `--approve all`, as root and as uid 65534, each
 * in a scratch HOME. The control: the same command with a grant beside them runs and plants its file.
 */

/** The command: plant a file in `dir`. */
const plant = (dir: string) => `touch '${dir}/planted' && echo planted`;

describe.skipIf(!stack.ok && !stack.missing.some((m) => REQUIRED.has(m)))(
  `grants inside hidden paths are refused, approved or not${stack.ok ? '' : ` [skipped: ${stack.reason}]`}`,
  () => {
    requiredButMissing(stack);

    for (const identity of identities) {
      describe.skipIf(identity.skip !== undefined)(
        `as ${identity.name}${identity.skip === undefined ? '' : ` [skipped: ${identity.skip}]`}`,
        () => {
          let mountpoint = '';
          let ctx: Ctx | undefined;
          let ws = '';
          let aleph = '';
          let otherHome = '';
          let logs = '';
          beforeAll(async () => {
            mountpoint = mkdtempSync(path.join(os.tmpdir(), 'aleph-hidden-grants-checkout-'));
            chmodSync(mountpoint, 0o755);
            ctx = makeCtx(identity, mountpoint);
            ws = path.join(ctx.dir, 'ws');
            aleph = path.join(ctx.home, '.aleph');
            logs = path.join(ctx.dir, 'logs');
            for (const d of [ws, path.join(aleph, 'data'), logs, path.join(ctx.home, 'beside')])
              mkdirSync(d, { recursive: true });
            writeFileSync(
              path.join(aleph, 'config.toml'),
              `[sandbox.audit]\njsonl_path = "${logs}/audit.jsonl"\n`,
            );
            chownR(ctx, ctx.dir);
            // Another session's first run makes its HOME (and the state directory).
            const other = await run(ctx, ws, 'other-session', 'echo ok');
            expect(other.status, shown(other)).toBe(0);
            otherHome = path.join(aleph, 'homes', sessionKeyToFilename('other-session'));
          }, 60_000);
          afterAll(() => {
            for (const dir of [ctx?.dir ?? '', mountpoint])
              if (dir !== '') rmSync(dir, { recursive: true, force: true });
          });

          const cases = () => [
            {
              flag: '--allow-write',
              grant: otherHome,
              hidden: "every session's HOME",
              where: path.join(aleph, 'homes'),
            },
            {
              flag: '--allow-write',
              grant: path.join(otherHome, '.config'),
              hidden: "every session's HOME",
              where: path.join(aleph, 'homes'),
            },
            {
              flag: '--allow-read',
              grant: path.join(aleph, 'run'),
              hidden: "the sandbox's state directory",
              where: path.join(aleph, 'run'),
            },
            {
              flag: '--allow-write',
              grant: path.join(aleph, 'run'),
              hidden: "the sandbox's state directory",
              where: path.join(aleph, 'run'),
            },
            {
              flag: '--allow-write',
              grant: path.join(aleph, 'data'),
              hidden: 'the vault',
              where: path.join(aleph, 'data'),
            },
            { flag: '--allow-write', grant: logs, hidden: "the audit log's directory", where: logs },
          ];

          it('each is refused before running, naming the grant, the hidden path and the fix; nothing is planted', async () => {
            const c = ctx as Ctx;
            for (const { flag, grant, hidden, where } of cases()) {
              const r = await run(c, ws, 'attacker', plant(grant), [flag, grant]);
              expect(r.status, `${flag} ${grant}: ${shown(r)}`).toBe(126);
              const said = `${r.stdout}${r.stderr}`;
              expect(said).toMatch(/ALEPH_CAPABILITY_DENIED/);
              expect(said).toContain(
                `lies inside ${hidden} (${where}), which no command may see whatever is approved; grant a path outside it`,
              );
              expect(said).toContain(JSON.stringify(grant));
              expect(existsSync(path.join(grant, 'planted')), grant).toBe(false);
            }
            expect(readdirSync(otherHome)).not.toContain('planted');
          }, 120_000);

          it('control: the same command with a grant beside them runs and plants its file', async () => {
            const beside = path.join((ctx as Ctx).home, 'beside');
            const r = await run(ctx as Ctx, ws, 'attacker', plant(beside), ['--allow-write', beside]);
            expect(r.json?.stdout, shown(r)).toBe('planted\n');
            expect(r.status, shown(r)).toBe(0);
            expect(existsSync(path.join(beside, 'planted'))).toBe(true);
          }, 60_000);
        },
      );
    }
  },
);
