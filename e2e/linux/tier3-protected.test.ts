import { type ChildProcess, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { sessionKeyToFilename } from '@aleph/sandbox-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  asUid,
  canSwitchUid,
  cliArgvAs,
  linuxStack,
  REQUIRED,
  requiredButMissing,
  startJson,
} from '../support.js';
import { identities, UNPRIVILEGED } from './hosts.js';

/**
 * Tier 3 has no mount namespace, so the protected paths inside the workspace are writable while the
 * command runs; the launcher checks them after it (native/linux/after-run/guard.c). Attacked through the real CLI on
 * simulated tier-3 hosts, as root and as uid 65534: the command plants a pre-commit hook, a core.fsmonitor
 * and core.hooksPath in .git/config, .aleph/config.toml, an .envrc line and an .npmrc, and proves they are
 * in place while it runs; afterwards the host's git and npm must run none of it, the originals must be back
 * byte for byte, and details.quarantined / details.restored must say so. Each payload only runs a trigger
 * that writes a marker; controls show each trigger does fire when the host plants the payload itself.
 */

const stack = linuxStack();
const isRoot = process.getuid?.() === 0;
const CLEAN_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';
interface Host {
  name: string;
  uid: number;
  /** The simulated host: a launcher the CLI runs under. */
  wrap: readonly string[];
  skip: string | undefined;
}
// The simulated tier-3 hosts of hosts.ts, and the seccomp one again as an unprivileged uid.
const direct = identities().filter((i) => i.tier === 'direct');
const seccomp = direct.find((i) => i.key === 'seccomp-no-namespaces');
const hosts: Host[] = [
  ...direct.map((i) => ({ name: `root; ${i.name}`, uid: i.uid, wrap: i.wrap, skip: i.skip })),
  ...(seccomp === undefined
    ? []
    : [
        {
          name: `uid ${UNPRIVILEGED} (setpriv); ${seccomp.name}`,
          uid: UNPRIVILEGED,
          wrap: seccomp.wrap,
          skip: seccomp.skip ?? (canSwitchUid() ? undefined : 'needs root and setpriv'),
        },
      ]),
];
const unavailable = !isRoot ? 'needs root (simulated hosts)' : undefined;

interface Ctx {
  host: Host;
  mountpoint: string;
  dir: string;
  home: string;
  ws: string;
  trigger: string;
  marker: string;
}

interface Details {
  tier?: string;
  notEnforced?: string[];
  quarantined?: string[];
  quarantine?: { path: string; movedTo: string }[];
  restored?: string[];
  notRestored?: string[];
}

interface CliResult {
  status: number | null;
  stdout: string;
  stderr: string;
  json: { stdout?: string; stderr?: string; details?: Details } | undefined;
}

const env = (ctx: Ctx) => ({ PATH: CLEAN_PATH, HOME: ctx.home, LANG: 'C.UTF-8' });

function chownR(ctx: Ctx, ...paths: string[]): void {
  if (ctx.host.uid === process.getuid?.()) return;
  const r = spawnSync('chown', ['-R', `${ctx.host.uid}:${ctx.host.uid}`, ...paths]);
  if (r.status !== 0) throw new Error(`chown failed: ${r.stderr}`);
}

/** A host command as the identity, in the workspace: its status and output, never thrown. */
function host(ctx: Ctx, argv: string[]): { status: number | null; out: string } {
  const [cmd, ...args] = asUid(ctx.host.uid, argv) as [string, ...string[]];
  const r = spawnSync(cmd, args, { cwd: ctx.ws, env: env(ctx), encoding: 'utf8', timeout: 60_000 });
  return { status: r.status, out: `${r.stdout}${r.stderr}` };
}

function hostOk(ctx: Ctx, argv: string[]): string {
  const r = host(ctx, argv);
  if (r.status !== 0) throw new Error(`${argv.join(' ')} failed (${r.status}): ${r.out}`);
  return r.out;
}

/** `run --json` of `sh -c command` through the CLI on the simulated host, started (not awaited). */
function startRun(
  ctx: Ctx,
  session: string,
  command: string,
): { child: ChildProcess; done: Promise<CliResult> } {
  const args = [
    'run',
    '--json',
    '--workspace',
    ctx.ws,
    '--session',
    session,
    '--approve',
    'all',
    '--allow-spawn',
  ];
  const argv = cliArgvAs(ctx.host.uid, ctx.mountpoint, [...args, '--', 'sh', '-c', command], ctx.host.wrap);
  // A run the test may SIGKILL: the CLI's temporary directory (its proxy's sockets) lies in the test's HOME.
  return startJson<CliResult['json']>(argv, { env: { ...env(ctx), TMPDIR: ctx.home }, cwd: ctx.dir });
}

const run = (ctx: Ctx, session: string, command: string) => startRun(ctx, session, command).done;
const shown = (r: CliResult) =>
  `exit ${r.status}\n${r.json?.stdout ?? r.stdout}\n${r.json?.stderr ?? ''}${r.stderr}`;
const fill = (ctx: Ctx, s: string) => s.replaceAll('{T}', ctx.trigger);
const sha = (file: string) => createHash('sha1').update(readFileSync(file)).digest('hex');
const HOOK = "printf '#!/bin/sh\\nexec {T}\\n'";

/** Polls `check` (one that throws, say on a file being put back, counts as not yet). */
async function until(check: () => boolean, what: string, ms = 15_000): Promise<void> {
  const holds = () => {
    try {
      return check();
    } catch {
      return false;
    }
  };
  for (let t = 0; t < ms && !holds(); t += 50) await sleep(50);
  if (!holds()) throw new Error(`timed out waiting for ${what}`);
}

/** What the host would run or read from the workspace: hook, config, .envrc, .npmrc, .aleph. */
function protectedState(ctx: Ctx) {
  const at = (rel: string) => path.join(ctx.ws, rel);
  return {
    config: sha(at('.git/config')),
    hooks: readdirSync(at('.git/hooks')).sort(),
    envrc: readFileSync(at('.envrc'), 'utf8'),
    npmrc: existsSync(at('.npmrc')),
    aleph: existsSync(at('.aleph')),
  };
}

/** The host's next commands, each of which runs a planted payload (see the controls). */
function hostNext(ctx: Ctx): string {
  const ran = [
    ['git', 'status'],
    ['git', 'commit', '--allow-empty', '-qm', 'host next'],
    ['npm', 'run', '-s', 't'],
  ].map((argv) => {
    const h = host(ctx, argv);
    return `$ ${argv.join(' ')} -> ${h.status}\n${h.out}`;
  });
  return ran.join('\n');
}

describe.skipIf((!stack.ok || unavailable !== undefined) && !stack.missing.some((m) => REQUIRED.has(m)))(
  `tier 3: protected paths are checked after the run${!stack.ok ? ` [skipped: ${stack.reason}]` : unavailable ? ` [skipped: ${unavailable}]` : ''}`,
  () => {
    requiredButMissing(stack);

    for (const h of hosts) {
      describe.skipIf(h.skip !== undefined)(
        `on a host where ${h.name}${h.skip ? ` [skipped: ${h.skip}]` : ''}`,
        () => {
          let mountpoint = '';
          const made: string[] = [];
          beforeAll(() => {
            mountpoint = mkdtempSync(path.join(os.tmpdir(), 'aleph-e2e-tier3-checkout-'));
            chmodSync(mountpoint, 0o755);
          });
          afterAll(() => {
            for (const d of [...made, mountpoint]) if (d !== '') rmSync(d, { recursive: true, force: true });
          });

          /** A scratch HOME and a repository with a commit, an .envrc and an npm script, owned by the identity. */
          const ctxFor = (repo = true): Ctx => {
            const dir = mkdtempSync(path.join(os.tmpdir(), 'aleph-e2e-tier3-'));
            made.push(dir);
            chmodSync(dir, 0o755);
            const ctx: Ctx = {
              host: h,
              mountpoint,
              dir,
              home: path.join(dir, 'home'),
              ws: path.join(dir, 'ws'),
              trigger: path.join(dir, 'trigger'),
              marker: path.join(dir, 'marker'),
            };
            mkdirSync(ctx.home, { mode: 0o700 });
            mkdirSync(ctx.ws);
            writeFileSync(
              path.join(ctx.home, '.gitconfig'),
              '[user]\n\tname = Host\n\temail = host@example.test\n',
            );
            writeFileSync(ctx.trigger, `#!/bin/sh\ntouch '${ctx.marker}'\n`, { mode: 0o755 });
            writeFileSync(
              path.join(ctx.ws, 'package.json'),
              '{"name":"w","version":"1.0.0","scripts":{"t":"true"}}\n',
            );
            writeFileSync(path.join(ctx.ws, '.envrc'), 'export HOST_ENVRC=1\n');
            chownR(ctx, dir);
            if (repo) {
              hostOk(ctx, ['git', 'init', '-q', '-b', 'main', '.']);
              hostOk(ctx, ['git', 'add', '-A']);
              hostOk(ctx, ['git', 'commit', '-qm', 'initial']);
            }
            return ctx;
          };

          describe('controls: each trigger fires when the host plants the payload itself', () => {
            const controls: [string, (ctx: Ctx) => void, string[]][] = [
              [
                '.git/hooks/pre-commit, git commit',
                (c) => plant(c, '.git/hooks/pre-commit', '#!/bin/sh\nexec {T}\n'),
                ['git', 'commit', '--allow-empty', '-qm', 'x'],
              ],
              [
                'core.fsmonitor, git status',
                (c) => hostOk(c, ['git', 'config', 'core.fsmonitor', c.trigger]),
                ['git', 'status'],
              ],
              [
                'core.hooksPath, git commit',
                (c) => {
                  plant(c, 'hk/pre-commit', '#!/bin/sh\nexec {T}\n');
                  hostOk(c, ['git', 'config', 'core.hooksPath', path.join(c.ws, 'hk')]);
                },
                ['git', 'commit', '--allow-empty', '-qm', 'x'],
              ],
              [
                '.npmrc script-shell, npm run',
                (c) => plant(c, '.npmrc', 'script-shell={T}\n'),
                ['npm', 'run', '-s', 't'],
              ],
            ];
            const plant = (c: Ctx, rel: string, content: string) => {
              mkdirSync(path.dirname(path.join(c.ws, rel)), { recursive: true });
              writeFileSync(path.join(c.ws, rel), fill(c, content), { mode: 0o755 });
              chownR(c, c.ws);
            };
            for (const [id, setup, argv] of controls)
              it(id, () => {
                const ctx = ctxFor();
                setup(ctx);
                const r = host(ctx, argv);
                expect(existsSync(ctx.marker), `the trigger did not fire: ${r.status} ${r.out}`).toBe(true);
              });
          });

          it('planted hooks, git config, .aleph/config.toml, .envrc and .npmrc: in place during the run, none left for the host after it, the originals back', async () => {
            const ctx = ctxFor();
            const before = protectedState(ctx);
            const command = fill(
              ctx,
              [
                `${HOOK} > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit`,
                'git config core.fsmonitor {T}',
                `mkdir -p hk && ${HOOK} > hk/pre-commit && chmod +x hk/pre-commit && git config core.hooksPath "$PWD/hk"`,
                'mkdir -p .aleph && printf "[sandbox.baseline]\\nspawn_subprocess = true\\n" > .aleph/config.toml',
                'echo {T} >> .envrc',
                'echo "script-shell={T}" > .npmrc',
                // Proof that the plant was made, inside the sandbox, while the command ran.
                '[ -x .git/hooks/pre-commit ] && grep -q fsmonitor .git/config && grep -q hooksPath .git/config && [ -f .aleph/config.toml ] && grep -q trigger .envrc && [ -f .npmrc ] && echo PLANTED',
              ].join(' && '),
            );
            const r = await run(ctx, 'plant', command);
            expect(r.json?.stdout, shown(r)).toBe('PLANTED\n');
            const d = r.json?.details ?? {};
            expect(d.tier).toBe('direct');
            expect(d.notEnforced?.some((g) => g.startsWith('protected-paths-during-run: '))).toBe(true);
            const at = (rel: string) => path.join(ctx.ws, rel);
            expect(d.quarantined, shown(r)).toEqual(
              expect.arrayContaining(['.git/hooks', '.git/config', '.aleph', '.envrc', '.npmrc'].map(at)),
            );
            expect(d.restored, shown(r)).toEqual(
              expect.arrayContaining(['.git/hooks', '.git/config', '.envrc'].map(at)),
            );
            // From the host: the originals, byte for byte, and nothing planted where it is run or read.
            expect(protectedState(ctx)).toEqual(before);
            // What was planted is kept aside in the session's quarantine, outside the repository.
            const movedTo = (rel: string) => {
              const q = d.quarantine?.find((e) => e.path === at(rel));
              expect(q?.movedTo.startsWith(`${ctx.ws}/`), shown(r)).toBe(false);
              return q?.movedTo as string;
            };
            expect(readFileSync(path.join(movedTo('.git/hooks'), 'pre-commit'), 'utf8')).toContain(
              ctx.trigger,
            );
            expect(readFileSync(movedTo('.git/config'), 'utf8')).toMatch(/fsmonitor|hooksPath/);
            expect(readdirSync(at('.git')).filter((n) => n.includes('aleph'))).toEqual([]);
            const ran = hostNext(ctx);
            expect(existsSync(ctx.marker), `the host ran planted code:\n${ran}`).toBe(false);
          });

          it('a .git swapped for another repository or a symlink to a planted one, or a repository the command creates, runs nothing on the host', async () => {
            const ctx = ctxFor();
            const swapped = await run(
              ctx,
              'swap',
              fill(
                ctx,
                `mv .git .git-host && git init -q . && git config core.fsmonitor {T} && ${HOOK} > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit && echo SWAPPED`,
              ),
            );
            expect(swapped.json?.stdout, shown(swapped)).toBe('SWAPPED\n');
            expect(swapped.json?.details?.restored).toEqual(
              expect.arrayContaining([path.join(ctx.ws, '.git/config')]),
            );
            let ran = hostNext(ctx);
            expect(existsSync(ctx.marker), `the host ran planted code:\n${ran}`).toBe(false);
            const linked = await run(
              ctx,
              'symlink',
              fill(
                ctx,
                'rm -rf .git && git init -q --bare planted.git && git -C planted.git config core.bare false && git -C planted.git config core.fsmonitor {T} && ln -s planted.git .git && git status > /dev/null && echo LINKED',
              ),
            );
            expect(linked.json?.stdout, shown(linked)).toBe('LINKED\n');
            expect(linked.json?.details?.quarantined).toContain(path.join(ctx.ws, '.git'));
            const nested = await run(
              ctx,
              'nested',
              fill(ctx, 'git init -q sub && git -C sub config core.fsmonitor {T} && echo NESTED'),
            );
            expect(nested.json?.stdout, shown(nested)).toBe('NESTED\n');
            expect(nested.json?.details?.quarantined).toContain(path.join(ctx.ws, 'sub/.git/config'));
            ran = [hostNext(ctx), host(ctx, ['git', '-C', 'sub', 'status']).out].join('\n');
            expect(existsSync(ctx.marker), `the host ran planted code:\n${ran}`).toBe(false);
          });

          it('overlapping runs in one workspace: a run that starts while another has planted cannot bring the plant back', async () => {
            const ctx = ctxFor();
            const before = protectedState(ctx);
            const a = startRun(
              ctx,
              'a',
              fill(
                ctx,
                `${HOOK} > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit && touch a-planted && i=0; while [ ! -e b-started ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done`,
              ),
            );
            await until(() => existsSync(path.join(ctx.ws, 'a-planted')), 'the plant of run A');
            const b = startRun(
              ctx,
              'b',
              'touch b-started; i=0; while [ -e .git/hooks/pre-commit ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done; echo B',
            );
            const [ra, rb] = await Promise.all([a.done, b.done]);
            expect(rb.json?.stdout, shown(rb)).toBe('B\n');
            expect(ra.json?.details?.restored, shown(ra)).toContain(path.join(ctx.ws, '.git/hooks'));
            expect(protectedState(ctx)).toEqual(before);
            const ran = hostNext(ctx);
            expect(existsSync(ctx.marker), `the host ran planted code:\n${ran}`).toBe(false);
          });

          it('SIGKILL of the CLI while the command runs: the launcher still puts the originals back', async () => {
            const ctx = ctxFor();
            const before = protectedState(ctx);
            const { child, done } = startRun(
              ctx,
              'killed-cli',
              fill(ctx, 'git config core.fsmonitor {T} && touch planted && exec sleep 31.3'),
            );
            await until(() => existsSync(path.join(ctx.ws, 'planted')), 'the plant');
            child.kill('SIGKILL');
            await done;
            await until(
              () => sha(path.join(ctx.ws, '.git/config')) === before.config,
              'the original .git/config',
            );
            expect(protectedState(ctx)).toEqual(before);
            // The plant went to the session's quarantine, not beside the original.
            const quarantined = path.join(
              ctx.home,
              '.aleph/quarantine',
              sessionKeyToFilename('killed-cli'),
              ctx.ws,
              '.git/config',
            );
            expect(readFileSync(quarantined, 'utf8')).toMatch(/fsmonitor/);
            expect(readdirSync(path.join(ctx.ws, '.git')).filter((n) => n.includes('aleph'))).toEqual([]);
            expect(spawnSync('pgrep', ['-f', '^sleep 31.3$']).stdout.toString().trim()).toBe('');
          });

          it('SIGKILL of the launcher itself: the next run in the workspace puts the originals back first, and says so', async () => {
            const ctx = ctxFor();
            const before = protectedState(ctx);
            const { child, done } = startRun(
              ctx,
              'killed-launcher',
              fill(ctx, 'git config core.fsmonitor {T} && touch planted && exec sleep 32.3'),
            );
            await until(() => existsSync(path.join(ctx.ws, 'planted')), 'the plant');
            // The launcher is the command's parent in tier 3 (a child of the driver's fork server, whose
            // command line it keeps, so it is found through the command).
            const command = spawnSync('pgrep', ['-f', '^sleep 32.3$']).stdout.toString().trim();
            expect(command, 'the command of this run').toMatch(/^\d+$/);
            const stat = readFileSync(`/proc/${command}/stat`, 'utf8');
            const launcher = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1] ?? '';
            expect(launcher, 'the launcher of this run').toMatch(/^\d+$/);
            expect(readFileSync(`/proc/${launcher}/comm`, 'utf8')).toMatch(/^aleph-sandbox/);
            process.kill(Number(launcher), 'SIGKILL');
            await done;
            expect(sha(path.join(ctx.ws, '.git/config')), 'left planted by the killed launcher').not.toBe(
              before.config,
            );
            const next = await run(ctx, 'next', 'echo next');
            expect(next.json?.stdout, shown(next)).toBe('next\n');
            // The killed run's record (launcher/inflight.c) has the next run check for it before it starts:
            // the plant is set aside as that run's (details.interruptedRun), and the guard puts the original
            // back from the killed run's snapshot.
            const earlier = (
              next.json?.details as { interruptedRun?: { quarantined?: string[] } } | undefined
            )?.interruptedRun;
            expect(earlier?.quarantined, shown(next)).toContain(path.join(ctx.ws, '.git/config'));
            expect(next.json?.details?.restored).toContain(path.join(ctx.ws, '.git/config'));
            expect(protectedState(ctx)).toEqual(before);
            const ran = hostNext(ctx);
            expect(existsSync(ctx.marker), `the host ran planted code:\n${ran}`).toBe(false);
          });
        },
      );
    }
  },
);
