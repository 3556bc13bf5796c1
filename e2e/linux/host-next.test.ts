import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DEFAULT_HOME_PROTECTED_PATHS } from '@aleph/sandbox-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REQUIRED, requiredButMissing } from '../support.js';
import {
  GIT_CASES,
  GIT_COMMIT,
  GIT_OWN,
  GIT_SANITY,
  GIT_STATUS,
  HOME_CASES,
  type HomeCase,
} from './host-next/cases.js';
import {
  CLEAN_PATH,
  type Ctx,
  chownR,
  dotGitEntries,
  fill,
  host,
  hostOk,
  identities,
  makeCtx,
  makeRepo,
  run,
  sha,
  shown,
  stack,
} from './host-next/world.js';

/**
 * "What the host runs next stays the user's" (issue 15), attacked through the real CLI as root and as an
 * unprivileged uid. Every class of the issue is a row of data: what the command plants, and the host
 * commands that would run it next (a `git status`, an interactive bash, `ssh`, a shim on PATH, the next
 * `aleph-sandbox run`). The planted thing must be refused inside the sandbox, or have no effect on the
 * host's next command: each payload only runs a trigger script that writes a marker file, and the host
 * runs its commands with the scratch HOME, a fixed PATH and a clean env, then asserts the marker is not
 * there. Every case gets its own scratch HOME (`aleph-host-next-*` under the temp dir, owned by the
 * identity), never the real one.
 */

/**
 * Rows that fail because of a sandbox bug, registered with `it.fails` so the suite stays green and turns
 * red once the bug is fixed. An entry is a row id (both identities) or `id@root` / `id@unprivileged`.
 */
const KNOWN_BROKEN = new Set<string>([]);

/** Top-level protected home paths the host user has (the rest must not exist afterwards: no stubs). */
const homeProtected = (home: string) =>
  DEFAULT_HOME_PROTECTED_PATHS.filter((p) => p !== '.aleph').map(
    (p) => [p, existsSync(path.join(home, p))] as const,
  );

/** Makes what the host user already has for a home row: the file itself (`existing`) and `hostHas`. */
function plantHostHas(ctx: Ctx, c: HomeCase): void {
  const file = path.join(ctx.home, c.file);
  for (const [rel, content] of Object.entries(c.hostHas ?? {})) {
    const p = path.join(ctx.home, rel);
    if (content === null) mkdirSync(p, { recursive: true });
    else {
      mkdirSync(path.dirname(p), { recursive: true });
      writeFileSync(p, content);
    }
  }
  if (c.existing !== undefined) {
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, c.existing);
  }
}

// ---------------------------------------------------------------------------------------------------

describe.skipIf(!stack.ok && !stack.missing.some((m) => REQUIRED.has(m)))(
  `what the host runs next stays the user's, through the CLI${stack.ok ? '' : ` [skipped: ${stack.reason}]`}`,
  () => {
    requiredButMissing(stack);

    for (const identity of identities) {
      describe.skipIf(identity.skip !== undefined)(
        `as ${identity.name}${identity.skip === undefined ? '' : ` [skipped: ${identity.skip}]`}`,
        () => {
          let mountpoint = '';
          const made: string[] = [];
          const ctxFor = () => {
            const ctx = makeCtx(identity, mountpoint);
            made.push(ctx.dir);
            return ctx;
          };
          beforeAll(() => {
            mountpoint = mkdtempSync(path.join(os.tmpdir(), 'aleph-host-next-checkout-'));
            chmodSync(mountpoint, 0o755);
          });
          afterAll(() => {
            for (const dir of [...made, mountpoint])
              if (dir !== '') rmSync(dir, { recursive: true, force: true });
          });
          const broken = (id: string) => KNOWN_BROKEN.has(id) || KNOWN_BROKEN.has(`${id}@${identity.key}`);

          // Controls: the same payloads planted by the host itself do fire the host's next command, so a
          // missing marker above means the plant was stopped, not that the trigger never runs.
          describe('controls: each trigger fires when the host plants it itself', () => {
            const controls: {
              id: string;
              file: (ctx: Ctx) => string;
              content: string;
              argv: (ctx: Ctx) => string[];
              pathVar?: (ctx: Ctx) => string;
              /** Makes what the file needs around it, in the workspace. */
              setup?: (ws: string) => void;
            }[] = [
              {
                id: 'repo .git/config core.fsmonitor, git status',
                file: (c) => path.join(c.dir, 'ws/.git/config'),
                content: '[core]\n\tfsmonitor = {T}\n',
                argv: () => GIT_STATUS,
              },
              {
                id: 'a git directory without a .git entry (sub/config core.fsmonitor), git -C sub status',
                file: (c) => path.join(c.dir, 'ws/sub/config'),
                content:
                  '[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = ..\n\tfsmonitor = {T}\n',
                argv: () => ['git', '-C', 'sub', 'status'],
                setup: (ws) => {
                  mkdirSync(path.join(ws, 'sub/objects'), { recursive: true });
                  mkdirSync(path.join(ws, 'sub/refs'), { recursive: true });
                  writeFileSync(path.join(ws, 'sub/HEAD'), 'ref: refs/heads/main\n');
                },
              },
              {
                id: 'repo .git/hooks/pre-commit, git commit',
                file: (c) => path.join(c.dir, 'ws/.git/hooks/pre-commit'),
                content: '#!/bin/sh\nexec {T}\n',
                argv: () => GIT_COMMIT,
              },
              {
                id: '~/.gitconfig alias, git l',
                file: (c) => path.join(c.home, '.gitconfig'),
                content: '[alias]\n\tl = !{T}\n',
                argv: () => ['git', 'l'],
              },
              {
                id: '~/.bashrc, bash -ic true',
                file: (c) => path.join(c.home, '.bashrc'),
                content: '{T}\n',
                argv: () => ['bash', '-ic', 'true'],
              },
              {
                id: '~/.profile, sh -lc true',
                file: (c) => path.join(c.home, '.profile'),
                content: '{T}\n',
                argv: () => ['sh', '-lc', 'true'],
              },
              {
                id: '~/.ssh/config ProxyCommand, ssh',
                file: (c) => path.join(c.home, '.ssh/config'),
                content: 'Host *\n  ProxyCommand {T}\n',
                argv: (c) => [
                  'ssh',
                  '-F',
                  path.join(c.home, '.ssh/config'),
                  '-o',
                  'BatchMode=yes',
                  '-o',
                  `UserKnownHostsFile=${path.join(c.dir, 'known_hosts')}`,
                  'aleph-host-next.invalid',
                  'true',
                ],
              },
              {
                id: '~/.local/bin shim, git --version',
                file: (c) => path.join(c.home, '.local/bin/git'),
                content: '#!/bin/sh\nexec {T}\n',
                argv: () => ['sh', '-c', 'git --version'],
                pathVar: (c) => `${path.join(c.home, '.local/bin')}:${CLEAN_PATH}`,
              },
            ];
            for (const c of controls)
              it(c.id, () => {
                const ctx = ctxFor();
                const ws = makeRepo(ctx, false);
                c.setup?.(ws);
                const file = c.file(ctx);
                mkdirSync(path.dirname(file), { recursive: true });
                writeFileSync(file, fill(ctx, c.content), { flag: 'a', mode: 0o755 });
                chmodSync(file, 0o755);
                chownR(ctx, ctx.home, ws);
                const h = host(ctx, c.argv(ctx), ws, c.pathVar?.(ctx));
                expect(existsSync(ctx.marker), `the trigger did not fire:\n${h.status} ${h.out}`).toBe(true);
              });
          });

          describe("controls: each home row's trigger fires when the host plants the file itself", () => {
            for (const c of HOME_CASES.filter((h) => h.next !== undefined))
              it(`~/${c.file} (${c.id})`, () => {
                const ctx = ctxFor();
                const file = path.join(ctx.home, c.file);
                plantHostHas(ctx, c);
                mkdirSync(path.dirname(file), { recursive: true });
                writeFileSync(file, fill(ctx, c.content), { flag: 'a', mode: 0o755 });
                chmodSync(file, 0o755);
                mkdirSync(path.join(ctx.dir, 'repo'), { recursive: true });
                chownR(ctx, ctx.home, path.join(ctx.dir, 'repo'));
                const ran: string[] = [];
                for (const n of c.next?.(ctx) ?? []) {
                  const h = host(ctx, n.argv, ctx.dir, n.pathVar);
                  ran.push(`$ ${n.argv.join(' ')} -> ${h.status}\n${h.out}`);
                }
                expect(existsSync(ctx.marker), `the trigger did not fire:\n${ran.join('\n')}`).toBe(true);
              });
          });

          describe('git: no control file the command wrote reaches host git', () => {
            for (const c of GIT_CASES) {
              (broken(c.id) ? it.fails : it)(`${c.id}${broken(c.id) ? ' [known broken]' : ''}`, async () => {
                const ctx = ctxFor();
                const ws = makeRepo(ctx, c.empty === true);
                c.setup?.(ctx, ws);
                const gitBefore = dotGitEntries(ws);
                const r = await run(ctx, ws, c.id, fill(ctx, c.command, ws));
                expect(r.json, shown(r)).toBeDefined();
                if (c.stdout !== undefined) expect(r.json?.stdout, shown(r)).toMatch(c.stdout);
                expect(existsSync(ctx.marker), 'the command itself reached the marker').toBe(false);
                const quarantined = r.json?.details?.quarantined ?? [];
                for (const rel of c.quarantined ?? [])
                  expect(quarantined, `details.quarantined names ${rel}\n${shown(r)}`).toContain(
                    path.join(ws, rel),
                  );
                for (const { path: q, movedTo } of r.json?.details?.quarantine ?? []) {
                  expect(q.startsWith(`${ws}/`), `${q} lies in the workspace`).toBe(true);
                  expect(existsSync(q), `${q} was moved away`).toBe(false);
                  // Out of the repository, into the session's quarantine under the HOME's ~/.aleph.
                  expect(movedTo.startsWith(path.join(ctx.home, '.aleph', 'quarantine')), movedTo).toBe(true);
                  const st = lstatSync(movedTo);
                  if (!st.isSymbolicLink())
                    expect(st.mode & 0o7111, `${movedTo} is not executable`).toBe(
                      st.isDirectory() ? 0o100 : 0,
                    );
                }
                // Nothing set aside is left in the repository for `git add -A` to commit.
                expect(host(ctx, ['find', '.', '-name', '*aleph-quarantined*'], ws).out).toBe('');
                // No stub is left in the repository's own .git (a commondir stub would break host git).
                if (c.empty !== true) {
                  const added = dotGitEntries(ws).filter((n) => !gitBefore.includes(n) && !GIT_OWN.test(n));
                  expect(added, 'entries added to the top .git').toEqual([]);
                }
                const ran: string[] = [];
                for (const argv of c.next) {
                  const h = host(ctx, argv, ws);
                  ran.push(`$ ${argv.join(' ')} -> ${h.status}\n${h.out}`);
                  expect(h.out, argv.join(' ')).not.toMatch(/dubious ownership/);
                }
                expect(existsSync(ctx.marker), `the host ran planted code:\n${ran.join('\n')}`).toBe(false);
              });
            }

            it('sanity: git add and git commit inside the sandbox work in the same repository', async () => {
              const ctx = ctxFor();
              const ws = makeRepo(ctx, false);
              const r = await run(ctx, ws, 'git-sanity', GIT_SANITY);
              expect(r.status, shown(r)).toBe(0);
              expect(r.json?.stdout?.trim(), shown(r)).toBe('2');
              expect(r.json?.details?.quarantined, 'nothing quarantined').toBeUndefined();
              expect(hostOk(ctx, ['git', 'log', '--format=%s'], ws)).toBe('sandboxed\ninitial\n');
              expect(hostOk(ctx, ['git', 'status', '--porcelain'], ws), 'host git status').toBe('');
            });
          });

          for (const mode of ['allow-write-home', 'home-as-workspace'] as const) {
            describe(`home (${mode === 'allow-write-home' ? '--allow-write <HOME>' : '--workspace <HOME>'}): startup and config files cannot be planted`, () => {
              for (const c of HOME_CASES) {
                const id = `home-${c.id}-${mode}`;
                (broken(id) ? it.fails : it)(
                  `${c.id} (~/${c.file})${broken(id) ? ' [known broken]' : ''}`,
                  async () => {
                    const ctx = ctxFor();
                    const file = path.join(ctx.home, c.file);
                    // A realistic home: ~/.config and ~/.local exist, and whatever the host user already has.
                    mkdirSync(path.join(ctx.home, '.config'), { recursive: true });
                    mkdirSync(path.join(ctx.home, '.local'), { recursive: true });
                    plantHostHas(ctx, c);
                    const repo = path.join(ctx.dir, 'repo');
                    mkdirSync(repo);
                    chownR(ctx, ctx.home, repo);
                    hostOk(ctx, ['git', 'init', '-q', '-b', 'main', '.'], repo);
                    hostOk(ctx, ['git', 'commit', '--allow-empty', '-qm', 'initial'], repo);
                    const protectedBefore = homeProtected(ctx.home);
                    const before = existsSync(file) ? sha(file) : undefined;
                    let ws = ctx.home;
                    const extra: string[] = [];
                    if (mode === 'allow-write-home') {
                      ws = path.join(ctx.dir, 'ws');
                      mkdirSync(ws);
                      chownR(ctx, ws);
                      extra.push('--allow-write', ctx.home);
                    }
                    const content = fill(ctx, c.content).replaceAll("'", "'\\''");
                    const command = [
                      `f='${file}'`,
                      '[ -e "$f" ] && existed=1',
                      'mkdir -p "$(dirname "$f")" 2>/dev/null',
                      `printf '%s' '${content}' >> "$f" && echo "WROTE $f" || echo "REFUSED $f"`,
                      `printf '%s' '${content}' > "$f.new" 2>/dev/null && mv -f "$f.new" "$f" 2>/dev/null && echo "REPLACED $f"`,
                      '[ -n "$existed" ] && rm -rf "$f" 2>/dev/null && [ ! -e "$f" ] && echo "REMOVED $f"',
                      'true',
                    ].join('\n');
                    const r = await run(ctx, ws, id, command, extra);
                    expect(r.status, shown(r)).toBe(0);
                    if (before === undefined && c.inProtectedDir !== true) {
                      // Missing when the command started: no placeholder, so it could write there (the
                      // declared absent-protected-paths-during-run); after the run it is set aside.
                      expect(r.json?.stdout, shown(r)).toBe(`WROTE ${file}\nREPLACED ${file}\n`);
                      expect(existsSync(file), `~/${c.file} was left for the host`).toBe(false);
                      const quarantined = r.json?.details?.quarantined ?? [];
                      expect(
                        quarantined.some((q) => file === q || file.startsWith(`${q}/`)),
                        `details.quarantined names ~/${c.file} or a protected path holding it\n${shown(r)}`,
                      ).toBe(true);
                    } else {
                      expect(r.json?.stdout, shown(r)).toBe(`REFUSED ${file}\n`);
                      if (before === undefined) expect(existsSync(file), `~/${c.file} was made`).toBe(false);
                      else expect(sha(file), `~/${c.file} changed`).toBe(before);
                    }
                    expect(
                      homeProtected(ctx.home),
                      'protected home paths that appeared (left behind)',
                    ).toEqual(protectedBefore);
                    const ran: string[] = [];
                    for (const n of c.next?.(ctx) ?? []) {
                      const h = host(ctx, n.argv, ctx.dir, n.pathVar);
                      ran.push(`$ ${n.argv.join(' ')} -> ${h.status}\n${h.out}`);
                    }
                    expect(existsSync(ctx.marker), `the host ran planted code:\n${ran.join('\n')}`).toBe(
                      false,
                    );
                  },
                );
              }
            });
          }

          describe('~/.aleph under a grant of an ancestor of home', () => {
            const id = 'aleph-ancestor-grant';
            (broken(id) ? it.fails : it)(
              `--allow-write <tmp>/home: ~/.aleph/config.toml and the compile cache cannot be written, and the next run's baseline does not rise${broken(id) ? ' [known broken]' : ''}`,
              async () => {
                const ctx = ctxFor();
                const aleph = path.join(ctx.home, '.aleph');
                mkdirSync(aleph, { mode: 0o700 });
                const config = path.join(aleph, 'config.toml');
                writeFileSync(config, '[sandbox]\ndefault_timeout_seconds = 60\n');
                const ws = path.join(ctx.dir, 'ws');
                mkdirSync(ws);
                chownR(ctx, ctx.home, ws);
                // A first run so the CLI's own compile cache exists.
                const warm = await run(ctx, ws, id, 'true');
                expect(warm.status, shown(warm)).toBe(0);
                const cacheFiles = () => {
                  const out = new Map<string, string>();
                  const walk = (d: string) => {
                    if (!existsSync(d)) return;
                    for (const n of readdirSync(d)) {
                      const p = path.join(d, n);
                      if (lstatSync(p).isDirectory()) walk(p);
                      else out.set(p, sha(p));
                    }
                  };
                  walk(path.join(aleph, 'cache'));
                  return out;
                };
                const cacheBefore = cacheFiles();
                const configBefore = sha(config);
                const outside = path.join(ctx.dir, 'outside');
                const planted = [
                  `[sandbox.baseline]\nfs_write = ["${ctx.dir}"]\nspawn_subprocess = true\n`,
                  '[sandbox.network]\nallow = ["*"]\n',
                  '[sandbox.command_policy]\nenabled = false\n',
                ].join('');
                const command = [
                  `a='${aleph}'`,
                  `printf '%s' '${planted}' >> "$a/config.toml" && echo "WROTE config.toml"`,
                  `printf '%s' '${planted}' > "$a/config.toml.new" 2>/dev/null && mv -f "$a/config.toml.new" "$a/config.toml" && echo "REPLACED config.toml"`,
                  'mkdir -p "$a/cache/planted" 2>/dev/null && echo planted > "$a/cache/planted/chunk.v8" && echo "WROTE cache"',
                  'for f in "$a"/cache/*/*; do [ -f "$f" ] && echo planted > "$f" 2>/dev/null && echo "WROTE $f"; done',
                  'echo x > "$a/planted" 2>/dev/null && echo "WROTE planted"',
                  `echo x > '${path.join(ctx.dir, 'home', 'granted-ok')}' && echo GRANT-WORKS`,
                  'true',
                ].join('\n');
                const r = await run(ctx, ws, id, command, ['--allow-write', path.join(ctx.dir, 'home')]);
                expect(r.status, shown(r)).toBe(0);
                expect(r.json?.stdout, shown(r)).toBe('GRANT-WORKS\n');
                expect(sha(config), 'config.toml changed').toBe(configBefore);
                expect(existsSync(path.join(aleph, 'planted')), '~/.aleph/planted').toBe(false);
                expect(existsSync(path.join(aleph, 'cache', 'planted')), 'planted compile cache').toBe(false);
                const cacheAfter = cacheFiles();
                for (const [f, h] of cacheBefore)
                  expect(cacheAfter.get(f), `cache file ${f} rewritten`).toBe(h);
                // The next run, with no grant at all, keeps the strict baseline.
                const next = await run(
                  ctx,
                  ws,
                  `${id}-next`,
                  [
                    // (Under the temp dir the sandbox has a private tmpfs: only the host's file counts.)
                    `echo x > '${outside}' 2>/dev/null`,
                    'python3 -c "import socket; socket.create_connection((\'1.1.1.1\', 80), 3)" 2>/dev/null && echo NETWORK',
                    'echo checked',
                  ].join('\n'),
                );
                expect(next.json?.stdout, shown(next)).toBe('checked\n');
                expect(existsSync(outside), 'the next run wrote outside its workspace').toBe(false);
                // (config.toml is unchanged, above: no planted baseline reaches a later run. A capability
                // flag such as --allow-spawn is granted by the flag itself, so it cannot show it.)
              },
              60_000,
            );
          });

          describe("the audit log and other sessions' homes", () => {
            const id = 'audit-log';
            (broken(id) ? it.fails : it)(
              `a grant of the audit log's own directory is refused; a command granted read of HOME cannot read the log, the vault or ~/.aleph/homes${broken(id) ? ' [known broken]' : ''}`,
              async () => {
                const ctx = ctxFor();
                const shared = path.join(ctx.dir, 'shared');
                mkdirSync(shared);
                writeFileSync(path.join(shared, 'readable.txt'), 'readable\n');
                const log = path.join(shared, 'audit.jsonl');
                const aleph = path.join(ctx.home, '.aleph');
                mkdirSync(aleph, { mode: 0o700 });
                writeFileSync(path.join(aleph, 'config.toml'), `[sandbox.audit]\njsonl_path = "${log}"\n`);
                const ws = path.join(ctx.dir, 'ws');
                mkdirSync(ws);
                chownR(ctx, ctx.home, ws, shared);
                const SECRET = 'aleph-other-session-secret-4711';
                const first = await run(ctx, ws, 'other-session', `echo ${SECRET} > /dev/null; echo ok`);
                expect(first.status, shown(first)).toBe(0);
                expect(readFileSync(log, 'utf8'), 'the audit log holds the other session').toContain(SECRET);
                expect(existsSync(path.join(aleph, 'homes')), '~/.aleph/homes exists').toBe(true);
                // The log's directory holds nothing but what the log made: no grant may lie in it.
                const refused = await run(ctx, ws, id, 'echo ran', ['--allow-read', shared]);
                expect(refused.status, shown(refused)).toBe(126);
                expect(refused.stdout, shown(refused)).toMatch(/lies inside the audit log's directory/);
                const r = await run(
                  ctx,
                  ws,
                  id,
                  [
                    `cat '${log}' 2>/dev/null && echo READ-LOG`,
                    `grep -r '${SECRET}' '${shared}' '${ctx.home}' 2>/dev/null && echo FOUND-SECRET`,
                    `ls -A '${aleph}/homes' 2>/dev/null | grep . && echo LISTED-HOMES`,
                    `for v in data .shared_token; do cat "${aleph}/$v" 2>/dev/null && echo READ-$v; done`,
                    'echo done',
                  ].join('\n'),
                  ['--allow-read', ctx.home],
                );
                expect(r.json?.stdout, shown(r)).toBe('done\n');
              },
              60_000,
            );
          });
        },
      );
    }
  },
);
