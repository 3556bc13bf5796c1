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
  utimesSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { sessionKeyToFilename } from '@aleph/sandbox-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { canSwitchUid, linuxStack, REQUIRED, runHarness, tempDirs } from '../support.js';
import { attacker } from './swap-attacker.js';

/**
 * Attacks on the host side of the Linux driver (the launcher, bwrap, the bridge): a command running
 * beside another in the same workspace swaps the paths the host side opens (protected paths, a granted
 * sub-directory, the workspace path itself) with symlinks to a decoy outside, for a bounded number of
 * rounds; and a command's loader and shell variables try to reach host-side processes. Every check is
 * made from the host. Runs as the current user and, when this is root, as an unprivileged uid.
 */

const stack = linuxStack();
const tempDir = tempDirs();
const UNPRIVILEGED = 65534;
const self = process.getuid?.() ?? 0;
const switchUid = canSwitchUid();
const identities = [
  { name: self === 0 ? 'root' : 'current user', uid: self },
  {
    name: `unprivileged uid ${UNPRIVILEGED} (setpriv)${switchUid ? '' : ' [skipped: needs root and setpriv to switch uid]'}`,
    uid: UNPRIVILEGED,
  },
];

/** How many times each victim command runs while an attacker swaps. */
const ROUNDS = 30;
const HOST_SIDE_ENV = ['PATH=/usr/sbin:/usr/bin:/sbin:/bin'];
/** Outcomes a run set up during a swap may legitimately end with. */
const REFUSALS = new Set(['ALEPH_DRIVER_FAILED', 'ALEPH_INVALID_COMMAND', 'ALEPH_CAPABILITY_DENIED']);

/** Every path below `root` (listing directories reads them: done before access times are aged). */
function tree(root: string): string[] {
  const st = lstatSync(root);
  if (!st.isDirectory()) return [root];
  return [
    root,
    ...readdirSync(root)
      .sort()
      .flatMap((name) => tree(path.join(root, name))),
  ];
}

/** Mode, owner, size, access, change and modify times of `paths`, by lstat only (nothing is read). */
function metadata(paths: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const p of paths) {
    const st = lstatSync(p);
    out[p] =
      `${st.mode.toString(8)} ${st.uid}:${st.gid} ${st.size} a${st.atimeMs} m${st.mtimeMs} c${st.ctimeMs}`;
  }
  return out;
}

/** The contents of the files among `paths`. */
function contents(paths: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const p of paths) if (lstatSync(p).isFile()) out[p] = readFileSync(p, 'utf8');
  return out;
}

/** Sets every access time below `root` far in the past, so any later read moves it (relatime). */
function ageAccessTimes(root: string): void {
  const st = lstatSync(root);
  if (st.isDirectory()) for (const name of readdirSync(root)) ageAccessTimes(path.join(root, name));
  if (!st.isSymbolicLink()) utimesSync(root, new Date('2001-01-01T00:00:00Z'), st.mtime);
}

interface StepResult {
  id: string;
  workspace: string;
  exitCode?: number | null;
  stdout?: string;
  stderr?: string;
  error?: { code: string; message: string };
  /** What the check after the run set aside, and where it went. */
  quarantine?: { path: string; movedTo: string }[];
}

interface HarnessPlan {
  workspaceRoot: string;
  driver?: Record<string, unknown>;
  steps: Record<string, unknown>[];
  parallel?: boolean;
  stopFile?: string;
  workspaces?: Record<string, string>;
  approve?: 'all' | 'none';
  /** Spawning is in the baseline: the victims' shells run without an approval (which 'none' denies). */
  spawnWithoutApproval?: boolean;
}

async function runPlan(
  plan: HarnessPlan,
  uid: number,
  home: string,
  base: string,
  whileRunning?: (finished: () => boolean) => Promise<void>,
): Promise<Map<string, StepResult>> {
  let finished = false;
  const ran = runHarness<StepResult>(
    plan,
    { ...process.env, HOME: home },
    {
      uid,
      mountpoint: path.join(base, 'repo'),
    },
  ).finally(() => {
    finished = true;
  });
  const [r] = await Promise.all([ran, whileRunning?.(() => finished)]);
  return r.results;
}

/** Every round ran and either did its job or was refused by the driver; none escaped (checked apart). */
function expectRoundsAccounted(results: Map<string, StepResult>, id: string): StepResult[] {
  const rounds = Array.from({ length: ROUNDS }, (_, k) => results.get(`${id}#${k}`));
  expect(rounds.every((r) => r !== undefined)).toBe(true);
  for (const r of rounds as StepResult[]) {
    if (r.error !== undefined)
      expect([r.id, REFUSALS.has(r.error.code)], r.error.message).toEqual([r.id, true]);
  }
  return rounds as StepResult[];
}

// The run's processes: those whose command line holds `marker`, and the driver's fork server with the
// launchers it forks (they keep its command line, `aleph-sandbox-init --spawner …`).
const processes = (marker: string) => {
  const found: { pid: string; comm: string; environ: string[] }[] = [];
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid) || Number(pid) === process.pid) continue;
    try {
      const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      if (!cmdline.includes(marker) && !/aleph-sandbox-init\0--spawner\0/.test(cmdline)) continue;
      const comm = readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
      const environ = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').filter(Boolean);
      found.push({ pid, comm, environ });
    } catch {
      // exited
    }
  }
  return found;
};

describe.skipIf(!stack.ok && !stack.missing.some((m) => REQUIRED.has(m)))(
  `Linux driver host side under attack${stack.ok ? '' : ` [skipped: ${stack.reason}]`}`,
  () => {
    for (const { name, uid } of identities) {
      describe.skipIf(uid !== self && !switchUid)(`as ${name}`, () => {
        let base = '';
        let root = '';
        let outside = '';
        let home = '';
        const own = (p: string) => {
          if (uid !== self) spawnSync('chown', ['-hR', `${uid}:${uid}`, p]);
        };

        beforeAll(() => {
          base = tempDir('aleph-races-');
          chmodSync(base, 0o755);
          home = os.homedir();
          if (uid !== self) {
            home = path.join(base, `home-${uid}`);
            mkdirSync(home, { mode: 0o700 });
            chownSync(home, uid, uid);
          }
          // The decoy: writable by anyone, so only the sandbox can stand between it and an escaped write.
          outside = path.join(base, 'outside');
          mkdirSync(path.join(outside, 'inner'), { recursive: true });
          chmodSync(outside, 0o777);
          chmodSync(path.join(outside, 'inner'), 0o777);
          writeFileSync(path.join(outside, 'decoy.txt'), 'DECOY-SECRET\n', { mode: 0o666 });
          chmodSync(path.join(outside, 'decoy.txt'), 0o666);
          root = path.join(base, 'workspaces');
          mkdirSync(root, { mode: 0o755 });
          own(root);
        });

        describe('parallel swaps of paths the host side opens', () => {
          let beforeTree: string[] = [];
          let beforeMeta: Record<string, string> = {};
          let beforeContents: Record<string, string> = {};
          let beforeRoot: Record<string, string> = {};
          const results = new Map<string, StepResult>();
          let atk = '';
          let proj = '';
          let gv = '';
          let controlMarker = '';
          const rootListing = () =>
            Object.fromEntries(
              ['.', ...readdirSync(root)].map((n) => {
                const st = lstatSync(path.join(root, n));
                return [n, `${st.mode.toString(8)} ${st.uid}:${st.gid}`];
              }),
            );

          beforeAll(async () => {
            atk = path.join(root, sessionKeyToFilename('atk'));
            proj = path.join(atk, 'proj');
            gv = path.join(root, sessionKeyToFilename('gv'));
            const catk = path.join(root, sessionKeyToFilename('catk'));
            // (a) a repository nested in the attacker's workspace (a `--workspace` inside another one):
            // its protected paths are plain directories for the attacker.
            mkdirSync(path.join(proj, '.git', 'hooks'), { recursive: true, mode: 0o755 });
            writeFileSync(path.join(proj, '.git', 'hooks', 'pre-commit'), 'ORIGINAL-HOOK\n');
            symlinkSync(outside, path.join(proj, 'evil-dir'));
            // (b) a granted sub-directory of a workspace and a symlink to the workspace's parent beside it.
            mkdirSync(path.join(gv, 'sub'), { recursive: true, mode: 0o755 });
            writeFileSync(path.join(gv, 'sub', 'kept.txt'), 'SUB\n');
            symlinkSync(root, path.join(gv, 'sub-link'));
            // (c) a custom workspace path inside the attacker's workspace, and a symlink to swap it with.
            mkdirSync(path.join(catk, 'proj'), { recursive: true, mode: 0o755 });
            symlinkSync(outside, path.join(catk, 'proj-link'));
            own(root);
            beforeTree = tree(outside);
            beforeContents = contents(beforeTree);
            ageAccessTimes(outside);
            beforeMeta = metadata(beforeTree);
            beforeRoot = rootListing();

            const victim = (id: string, session: string, script: string, waitFor: string, extra = {}) => ({
              id,
              session,
              repeat: ROUNDS,
              waitFor,
              command: {
                program: 'sh',
                args: ['-c', script],
                capabilities: { spawnSubprocess: true },
                ...extra,
              },
            });
            // Through DIR: create, append to, truncate and read files, and make a directory.
            const writeAll = (dir: string) =>
              `echo PWNED > ${dir}/marker; echo PWNED >> ${dir}/decoy.txt; : > ${dir}/decoy.txt; mkdir ${dir}/made; cat ${dir}/decoy.txt ${dir}/inner/*; true`;
            const plans: HarnessPlan[] = [
              {
                // (a) protected paths of a nested repository: an existing one exchanged with a symlink to
                // the decoy, and missing ones (a directory and a file stub) planted as symlinks.
                workspaceRoot: root,
                parallel: true,
                approve: 'none',
                spawnWithoutApproval: true,
                stopFile: `${atk}/.stop`,
                workspaces: { atk, vic: proj },
                steps: [
                  attacker('a-attacker', 'atk', {
                    actions: [
                      ['xchg', `${proj}/.git/hooks`, `${proj}/evil-dir`],
                      ['link', `${proj}/.aleph`, outside],
                      ['link', `${proj}/.git/config`, `${outside}/decoy.txt`],
                    ],
                    stop: `${atk}/.stop`,
                    ready: `${atk}/.ready`,
                  }),
                  victim(
                    'a-victim',
                    'vic',
                    `(${writeAll('.git/hooks')}); (${writeAll('evil-dir')}); (${writeAll('.aleph')}); echo PWNED >> .git/config; : > .git/config; cat .git/config`,
                    `${atk}/.ready`,
                  ),
                ],
              },
              {
                // (a') the same repository's .git/hooks exchanged with the symlink for a moment at a time, so
                // most victims start and run through exchanges: the real hooks directory, mounted read-only,
                // is then for a moment under another name of the writable workspace.
                workspaceRoot: root,
                parallel: true,
                approve: 'none',
                spawnWithoutApproval: true,
                stopFile: `${atk}/.stop-moment`,
                workspaces: { atk, vic: proj },
                steps: [
                  attacker('a-moment-attacker', 'atk', {
                    actions: [
                      ['xchg', `${proj}/.git/hooks`, `${proj}/evil-dir`],
                      ['sleep', '0.002', ''],
                      ['xchg', `${proj}/.git/hooks`, `${proj}/evil-dir`],
                      ['sleep', '0.02', ''],
                    ],
                    stop: `${atk}/.stop-moment`,
                    ready: `${atk}/.ready-moment`,
                  }),
                  victim(
                    'a-moment',
                    'vic',
                    'i=0; while [ $i -lt 4000 ]; do echo PWNED > evil-dir/marker; echo PWNED >> evil-dir/pre-commit; echo PWNED > .git/hooks/marker; i=$((i+1)); done 2>/dev/null; echo ran',
                    `${atk}/.ready-moment`,
                  ),
                ],
              },
              {
                // (b) in one workspace: a granted sub-directory exchanged with a symlink to the workspace's
                // parent, and a .git/hooks the attacker made itself (so no mount point in its own sandbox)
                // exchanged with a symlink to the decoy.
                workspaceRoot: root,
                parallel: true,
                approve: 'none',
                spawnWithoutApproval: true,
                stopFile: `${gv}/.stop`,
                steps: [
                  attacker('b-attacker', 'gv', {
                    mkdir: [`${gv}/.git/hooks`],
                    symlink: [[outside, `${gv}/.git/evil`]],
                    actions: [
                      ['xchg', `${gv}/sub`, `${gv}/sub-link`],
                      ['xchg', `${gv}/.git/hooks`, `${gv}/.git/evil`],
                    ],
                    stop: `${gv}/.stop`,
                    ready: `${gv}/.ready`,
                  }),
                  victim(
                    'b-victim',
                    'gv',
                    `${writeAll(`${gv}/sub`)}; ${writeAll(`${gv}/sub/..`)}; ${writeAll('.git/hooks')}`,
                    `${gv}/.ready`,
                    { capabilities: { spawnSubprocess: true, fsWrite: [`${gv}/sub`] } },
                  ),
                ],
              },
              {
                // (c) the workspace path itself: a session's workspace (workspaceFor) exchanged with a
                // symlink to the decoy, for new sessions (their first run resolves the path) and an old one.
                workspaceRoot: root,
                parallel: true,
                approve: 'none',
                spawnWithoutApproval: true,
                stopFile: `${catk}/.stop`,
                workspaces: {
                  catk,
                  cold: path.join(catk, 'proj'),
                  ...Object.fromEntries(
                    Array.from({ length: ROUNDS }, (_, k) => [`cnew${k}`, path.join(catk, 'proj')]),
                  ),
                },
                steps: [
                  { id: 'c-warm', session: 'cold', command: { program: 'true', args: [] } },
                  attacker('c-attacker', 'catk', {
                    actions: [['xchg', `${catk}/proj`, `${catk}/proj-link`]],
                    stop: `${catk}/.stop`,
                    ready: `${catk}/.ready`,
                  }),
                  victim('c-new', 'cnew{k}', writeAll('.'), `${catk}/.ready`),
                  victim('c-old', 'cold', writeAll('.'), `${catk}/.ready`),
                ],
              },
            ];
            for (const plan of plans) {
              for (const [id, r] of await runPlan(plan, uid, home, base)) results.set(id, r);
            }
            // The control: the hooks directory moved by the host to a name that is not protected, the same
            // victim's write lands in it (so a write that did not land in the races was stopped by the sandbox).
            const hooksDir = path.join(proj, '.git', 'hooks');
            const moved = path.join(proj, 'ctl-hooks');
            renameSync(hooksDir, moved);
            const ctl = await runPlan(
              {
                workspaceRoot: root,
                approve: 'none',
                spawnWithoutApproval: true,
                workspaces: { vic: proj },
                steps: [
                  {
                    id: 'control',
                    session: 'vic',
                    command: { program: 'sh', args: ['-c', 'echo PWNED > ctl-hooks/marker && echo ran'] },
                  },
                ],
              },
              uid,
              home,
              base,
            );
            controlMarker = readFileSync(path.join(moved, 'marker'), 'utf8');
            results.set('control', ctl.get('control') as StepResult);
            rmSync(path.join(moved, 'marker'));
            renameSync(moved, hooksDir);
          }, 600_000);

          it('the attackers really swapped while the victims ran', () => {
            for (const id of ['a-attacker', 'a-moment-attacker', 'b-attacker', 'c-attacker']) {
              const r = results.get(id);
              const said = r?.error?.message ?? `${r?.stdout ?? ''}${r?.stderr ?? ''} exit ${r?.exitCode}`;
              expect([id, said]).toEqual([id, expect.stringMatching(/^swaps \d+/)]);
            }
          });

          it('nothing outside the workspace was read, written, truncated, created or chowned', () => {
            // Metadata first: it reads nothing, so the access times are still those the attack left.
            expect(metadata(beforeTree)).toEqual(beforeMeta);
            expect(tree(outside)).toEqual(beforeTree);
            expect(contents(beforeTree)).toEqual(beforeContents);
            expect(rootListing()).toEqual(beforeRoot);
            for (const r of results.values()) expect(r.stdout ?? '', r.id).not.toContain('DECOY');
          });

          it("control: the victim's write lands in the hooks directory when the host moved it to a name that is not protected", () => {
            expect(results.get('control')?.stdout).toBe('ran\n');
            expect(controlMarker).toBe('PWNED\n');
          });

          it('every round did its job or was refused by the driver', () => {
            for (const id of ['a-victim', 'a-moment', 'b-victim', 'c-new', 'c-old'])
              expectRoundsAccounted(results, id);
            // The victims of the moments' exchanges mostly started: they really ran while the names moved.
            const ran = expectRoundsAccounted(results, 'a-moment').filter((r) => r.stdout === 'ran\n');
            expect(ran.length).toBeGreaterThan(0);
          });

          it('a write that reached the real hooks under the name they were moved to was set aside after its run', () => {
            // The victims won the race (their writes reached the directory mounted read-only, while the
            // attacker held it under the writable name): each time, the check after that run moved what
            // they wrote to the session's quarantine.
            const hooks = path.join(proj, '.git', 'hooks');
            const setAside = Array.from(
              { length: ROUNDS },
              (_, k) => results.get(`a-moment#${k}`)?.quarantine ?? [],
            )
              .flat()
              .filter((q) => q.path === path.join(hooks, 'marker'));
            expect(setAside.length).toBeGreaterThan(0);
            for (const q of setAside) expect(readFileSync(q.movedTo, 'utf8')).toBe('PWNED\n');
          });

          it("the protected paths' real content did not change and nothing was left in place of a missing one", () => {
            // The real hooks directory is back at its name (the attackers leave the names as they found
            // them) and holds nothing the victims wrote: the original hook, unchanged, unless a victim's
            // write reached it under the other name, when the check after that run set the hook aside.
            const hooks = path.join(proj, '.git', 'hooks');
            expect(lstatSync(hooks).isDirectory()).toBe(true);
            expect(lstatSync(path.join(proj, 'evil-dir')).isSymbolicLink()).toBe(true);
            expect(readdirSync(hooks).filter((n) => n !== 'pre-commit')).toEqual([]);
            if (existsSync(path.join(hooks, 'pre-commit')))
              expect(readFileSync(path.join(hooks, 'pre-commit'), 'utf8')).toBe('ORIGINAL-HOOK\n');
            expect(existsSync(path.join(proj, '.aleph'))).toBe(false);
            expect(existsSync(path.join(proj, '.git', 'config'))).toBe(false);
            // That .git/hooks was missing when the attacker's run started: the check after it set aside what
            // was there then; what is left of the exchange holds nothing the victims wrote.
            expect(existsSync(path.join(gv, '.git', 'hooks'))).toBe(false);
            const evil = path.join(gv, '.git', 'evil');
            if (existsSync(evil) && lstatSync(evil).isDirectory()) expect(readdirSync(evil)).toEqual([]);
            expect(existsSync(path.join(gv, '.git', 'config'))).toBe(false);
            // The granted directory kept its file, wherever the exchange left it, unless a check after a
            // run that could not examine it mid-exchange set it aside whole (failing closed).
            for (const p of [path.join(gv, 'sub'), path.join(gv, 'sub-link')])
              if (existsSync(p) && lstatSync(p).isDirectory()) expect(readdirSync(p)).toContain('kept.txt');
            for (const ws of [proj, gv])
              for (const name of ['.aleph', '.codex', '.agents'])
                expect(existsSync(path.join(ws, name))).toBe(false);
          });
        });

        describe("the caller's environment", () => {
          const hostMark = () => path.join(base, 'host-mark');
          const tmpMark = `/tmp/aleph-inner-mark-${process.pid}-${uid}`;
          const probeMarker = `aleph-envprobe-${process.pid}-${uid}`;
          const results = new Map<string, StepResult>();
          let ws = '';
          const seen: { pid: string; comm: string; environ: string[] }[] = [];

          beforeAll(async () => {
            chmodSync(base, 0o777); // an escaped constructor could create the host marker here
            ws = path.join(root, sessionKeyToFilename('env'));
            const source = [
              '#include <fcntl.h>',
              '#include <string.h>',
              '#include <unistd.h>',
              '__attribute__((constructor)) static void mark(void) {',
              '  char comm[64] = "?\\n"; int c = open("/proc/self/comm", O_RDONLY);',
              '  if (c >= 0) { ssize_t n = read(c, comm, sizeof comm - 1); if (n > 0) comm[n] = 0; close(c); }',
              `  const char *paths[] = {"${hostMark()}", "${ws}/ws-mark", "${tmpMark}"};`,
              '  for (int i = 0; i < 3; i++) { int fd = open(paths[i], O_WRONLY | O_CREAT | O_APPEND, 0666);',
              '    if (fd >= 0) { if (write(fd, comm, strlen(comm)) < 0) {} close(fd); } }',
              '}',
              'unsigned int la_version(unsigned int v) { return v; }',
              '',
            ].join('\n');
            const sh = (script: string, extra: Record<string, unknown> = {}) => ({
              program: 'sh',
              args: ['-c', script],
              capabilities: { spawnSubprocess: true },
              ...extra,
            });
            const lib = `${ws}/evil.so`;
            const netCaps = { spawnSubprocess: true, network: { kind: 'allowHosts', hosts: ['api.test'] } };
            const refused = [
              { id: 'refuse-preload', env: { LD_PRELOAD: lib } },
              { id: 'refuse-library-path', env: { LD_LIBRARY_PATH: ws } },
              { id: 'refuse-audit', env: { LD_AUDIT: lib } },
            ];
            const first = await runPlan(
              {
                workspaceRoot: root,
                driver: { resolve: { 'api.test': ['127.0.0.1'] } },
                steps: [
                  {
                    id: 'build',
                    session: 'env',
                    command: sh(
                      `cat > evil.c <<'EOF'\n${source}EOF\ncc -shared -fPIC -o evil.so evil.c && echo built`,
                    ),
                  },
                  ...refused.map(({ id, env }) => ({ id, session: 'env', command: sh('true', { env }) })),
                  ...refused.map(({ id, env }) => ({
                    id: `${id}-net`,
                    session: 'env',
                    command: sh('true', { env, capabilities: netCaps }),
                  })),
                  {
                    id: 'shell-env',
                    session: 'env',
                    command: sh(`sleep 2; : ${probeMarker}`, {
                      env: { BASH_ENV: `${ws}/evil.sh`, ENV: `${ws}/evil.sh`, ALEPH_PROBE: probeMarker },
                    }),
                  },
                ],
              },
              uid,
              home,
              base,
              async (finished) => {
                // Poll the processes of the run while it sleeps (bounded): bwrap, the launcher, the helper.
                for (
                  let i = 0;
                  i < 4000 &&
                  !finished() &&
                  // Until the command's sh itself is seen: the helper inside carries the command's env
                  // for a moment before its execve, and a loaded machine makes that moment long.
                  !seen.some((p) => p.comm === 'sh' && p.environ.includes(`ALEPH_PROBE=${probeMarker}`));
                  i++
                ) {
                  // By pid and name: the helper inside becomes the command's sh by execve, keeping its pid.
                  for (const p of processes(probeMarker))
                    if (!seen.some((s) => s.pid === p.pid && s.comm === p.comm)) seen.push(p);
                  await sleep(25);
                }
              },
            );
            const second = await runPlan(
              {
                workspaceRoot: root,
                driver: { allowLoaderEnv: ['LD_PRELOAD'], resolve: { 'api.test': ['127.0.0.1'] } },
                steps: [
                  {
                    id: 'allowed',
                    session: 'env',
                    command: sh(`cat ${tmpMark}; : > ${tmpMark}`, { env: { LD_PRELOAD: lib } }),
                  },
                  {
                    id: 'allowed-net',
                    session: 'env',
                    command: sh(`cat ${tmpMark}; : > ${tmpMark}`, {
                      env: { LD_PRELOAD: lib },
                      capabilities: netCaps,
                    }),
                  },
                  { id: 'still-refused', session: 'env', command: sh('true', { env: { LD_AUDIT: lib } }) },
                ],
              },
              uid,
              home,
              base,
            );
            for (const m of [first, second]) for (const [id, r] of m) results.set(id, r);
          }, 240_000);

          afterAll(() => {
            rmSync(tmpMark, { force: true });
          });

          it('a library an earlier command built is refused in LD_PRELOAD, LD_LIBRARY_PATH and LD_AUDIT', () => {
            expect(results.get('build')?.stdout).toBe('built\n');
            const names = { preload: 'LD_PRELOAD', 'library-path': 'LD_LIBRARY_PATH', audit: 'LD_AUDIT' };
            for (const [suffix, name] of Object.entries(names)) {
              for (const id of [`refuse-${suffix}`, `refuse-${suffix}-net`]) {
                const r = results.get(id);
                expect([id, r?.error?.code]).toEqual([id, 'ALEPH_INVALID_COMMAND']);
                expect(r?.error?.message).toContain(name);
              }
            }
            const still = results.get('still-refused');
            expect(still?.error?.code).toBe('ALEPH_INVALID_COMMAND');
            expect(still?.error?.message).toContain('LD_AUDIT');
          });

          it('an allowed LD_PRELOAD loads only in the sandboxed programs, never in bwrap, the launcher or the bridge', () => {
            for (const id of ['allowed', 'allowed-net']) {
              const r = results.get(id);
              expect([id, r?.error, r?.exitCode]).toEqual([id, undefined, 0]);
              // Inside: the shell and cat loaded it (its /tmp marker is the session's own, emptied after each).
              expect(r?.stdout).toBe('sh\ncat\n');
            }
            const loadedBy = readFileSync(path.join(ws, 'ws-mark'), 'utf8').trim().split('\n');
            expect([...new Set(loadedBy)].sort()).toEqual(['cat', 'sh']);
            expect(existsSync(hostMark())).toBe(false);
            expect(existsSync(tmpMark)).toBe(false);
          });

          it('bwrap, the launcher and the helper run with PATH alone (no BASH_ENV, ENV or other caller env)', () => {
            const hostSide = seen.filter((p) => p.comm === 'bwrap' || p.comm.startsWith('aleph-sandbox'));
            // The fork server and the launcher it forked for this run are among them.
            expect(hostSide.filter((p) => p.comm.startsWith('aleph-sandbox')).length).toBeGreaterThanOrEqual(
              2,
            );
            expect(hostSide.some((p) => p.comm === 'bwrap')).toBe(true);
            expect(hostSide.some((p) => p.comm.startsWith('aleph-sandbox'))).toBe(true);
            for (const p of hostSide) expect([p.comm, p.environ]).toEqual([p.comm, HOST_SIDE_ENV]);
            // The command itself got its env (so the probe saw the right run).
            expect(
              seen.some((p) => p.comm === 'sh' && p.environ.includes(`ALEPH_PROBE=${probeMarker}`)),
            ).toBe(true);
            expect(results.get('shell-env')?.exitCode).toBe(0);
          });
        });
      });
    }
  },
);
