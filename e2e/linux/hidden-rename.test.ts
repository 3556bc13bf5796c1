import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REQUIRED, requiredButMissing } from '../support.js';
import { type Ctx, chownR, hostOk, identities, makeCtx, run, shown, stack } from './host-next/world.js';

/**
 * A hidden path is hidden by its name, so no run may move it out from under that name: an approved
 * `--allow-write` of the parent of HOME cannot rename HOME, nor `~/.aleph`, nor the vault (each is a mount
 * point inside: EBUSY), and a later run granted that parent to read finds the vault's file under no name.
 * Through the real CLI with `--approve all`, as root and as uid 65534, each in a scratch HOME. The control:
 * when the host itself renames HOME, the same reading run does read the file, which is what the renaming
 * run would have given it.
 */

const SECRET = 'vault-secret-4d1f';

/** Tries each rename, one line per attempt: `NAME ok` or `NAME refused: <error>`. */
const renames = (moves: [string, string, string][]) =>
  moves
    .map(
      ([name, from, to]) =>
        `if mv '${from}' '${to}' 2>/tmp/e; then echo '${name} ok'; else echo "${name} refused: $(cat /tmp/e)"; fi`,
    )
    .join('; ');

/** Prints the vault's file wherever it is under `top`, and under each name it could have. */
const readAll = (top: string, home: string) =>
  [
    `cat '${home}/.aleph/data/secret.txt' '${home}2/.aleph/data/secret.txt' '${home}/.x/data/secret.txt' 2>/dev/null`,
    `find '${top}' -name secret.txt -exec cat {} + 2>/dev/null`,
    'echo done',
  ].join('; ');

describe.skipIf(!stack.ok && !stack.missing.some((m) => REQUIRED.has(m)))(
  `no run can move a hidden path out from under its name${stack.ok ? '' : ` [skipped: ${stack.reason}]`}`,
  () => {
    requiredButMissing(stack);

    for (const identity of identities) {
      describe.skipIf(identity.skip !== undefined)(
        `as ${identity.name}${identity.skip === undefined ? '' : ` [skipped: ${identity.skip}]`}`,
        () => {
          let mountpoint = '';
          let ctx: Ctx | undefined;
          let ws = '';
          let top = '';
          let logs = '';
          beforeAll(async () => {
            mountpoint = mkdtempSync(path.join(os.tmpdir(), 'aleph-hidden-rename-checkout-'));
            chmodSync(mountpoint, 0o755);
            ctx = makeCtx(identity, mountpoint);
            ws = path.join(ctx.dir, 'ws');
            top = path.dirname(ctx.home);
            mkdirSync(ws);
            mkdirSync(path.join(ctx.home, '.aleph', 'data'), { recursive: true });
            writeFileSync(path.join(ctx.home, '.aleph', 'data', 'secret.txt'), `${SECRET}\n`);
            // The audit log's directory, outside HOME, two levels below what the runs are granted.
            logs = path.join(ctx.dir, 'var', 'app', 'logs');
            mkdirSync(logs, { recursive: true });
            writeFileSync(path.join(logs, 'secret.txt'), `${SECRET}\n`);
            writeFileSync(
              path.join(ctx.home, '.aleph', 'config.toml'),
              `[sandbox.audit]\njsonl_path = "${logs}/audit.jsonl"\n`,
            );
            chownR(ctx, ctx.dir);
            // A first run makes the session HOMEs and the state directory.
            const first = await run(ctx, ws, 'first', 'echo ok');
            expect(first.status, shown(first)).toBe(0);
          }, 60_000);
          afterAll(() => {
            for (const dir of [ctx?.dir ?? '', mountpoint])
              if (dir !== '') rmSync(dir, { recursive: true, force: true });
          });

          it('a run granted write on the parent of HOME cannot rename HOME, ~/.aleph or the vault', async () => {
            const c = ctx as Ctx;
            const aleph = path.join(c.home, '.aleph');
            const r = await run(
              c,
              ws,
              'mover',
              renames([
                ['vault', path.join(aleph, 'data'), path.join(aleph, 'data2')],
                ['aleph', aleph, path.join(c.home, '.x')],
                ['home', c.home, `${c.home}2`],
              ]),
              ['--allow-write', top],
            );
            expect(r.status, shown(r)).toBe(0);
            const out = r.json?.stdout ?? '';
            for (const name of ['vault', 'aleph', 'home'])
              expect(out, shown(r)).toMatch(
                new RegExp(`^${name} refused: .*(Device or resource busy|Read-only file system)$`, 'im'),
              );
            expect(readFileSync(path.join(aleph, 'data', 'secret.txt'), 'utf8')).toBe(`${SECRET}\n`);
            for (const moved of [`${c.home}2`, path.join(c.home, '.x'), path.join(aleph, 'data2')])
              expect(existsSync(moved), moved).toBe(false);
          }, 60_000);

          it("a run granted write two levels above the audit log's directory cannot rename the level between", async () => {
            const c = ctx as Ctx;
            const app = path.dirname(logs);
            const r = await run(c, ws, 'mover', renames([['app', app, `${app}2`]]), [
              '--allow-write',
              path.dirname(app),
            ]);
            expect(r.json?.stdout, shown(r)).toMatch(/^app refused: .*Device or resource busy$/m);
            expect(existsSync(`${app}2`)).toBe(false);
            const b = await run(c, ws, 'reader', readAll(path.dirname(app), c.home), [
              '--allow-read',
              path.dirname(app),
            ]);
            expect(b.json?.stdout, shown(b)).toBe('done\n');
          }, 60_000);

          it('a later run granted the parent of HOME to read sees the vault under no name', async () => {
            const r = await run(ctx as Ctx, ws, 'reader', readAll(top, (ctx as Ctx).home), [
              '--allow-read',
              top,
            ]);
            expect(r.status, shown(r)).toBe(0);
            expect(r.json?.stdout, shown(r)).toBe('done\n');
          }, 60_000);

          it('a symlink on the way to a hidden path, inside a write grant, is refused before anything runs', async () => {
            const c = ctx as Ctx;
            const app = path.dirname(logs);
            const link = path.join(path.dirname(app), 'applink');
            const config = path.join(c.home, '.aleph', 'config.toml');
            const before = readFileSync(config, 'utf8');
            hostOk(c, ['ln', '-s', 'app', link], c.dir);
            writeFileSync(config, `[sandbox.audit]\njsonl_path = "${link}/logs/audit.jsonl"\n`);
            try {
              const r = await run(c, ws, 'mover', `mv '${link}' '${link}2'; echo moved`, [
                '--allow-write',
                path.dirname(app),
              ]);
              const said = `${r.stdout}${r.stderr}`;
              expect(said, shown(r)).toMatch(/ALEPH_INVALID_COMMAND/);
              expect(said).toContain(`is a symlink on the way to ${link}/logs`);
              expect(r.json?.stdout ?? '').not.toContain('moved');
              expect(existsSync(link)).toBe(true);
            } finally {
              writeFileSync(config, before);
              rmSync(link, { force: true });
            }
          }, 60_000);

          it('control: once the host itself renames HOME, that run reads the file under the new name', async () => {
            const c = ctx as Ctx;
            hostOk(c, ['mv', c.home, `${c.home}2`], c.dir);
            hostOk(c, ['mkdir', '-m', '0700', c.home], c.dir);
            try {
              const r = await run(c, ws, 'reader', readAll(top, c.home), ['--allow-read', top]);
              expect(r.json?.stdout, shown(r)).toContain(SECRET);
            } finally {
              rmSync(c.home, { recursive: true, force: true });
              hostOk(c, ['mv', `${c.home}2`, c.home], c.dir);
            }
          }, 60_000);
        },
      );
    }
  },
);
