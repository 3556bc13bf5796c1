import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { DEFAULT_PROTECTED_PATHS } from '@aleph/sandbox-core';
import { afterEach, describe, expect, it } from 'vitest';
import { checkHelperSync, resolveHelperPath } from '../src/index.js';

/**
 * Tier 3's guard of protected paths (native/linux/after-run/guard.c), run by the real launcher around a program
 * that is not sandboxed: the program plays the command and writes what it likes; after it ends the
 * launcher must have put back what it changed and set aside what it created, as the report says.
 */

const helper = resolveHelperPath();
const usable = process.platform === 'linux' && checkHelperSync(helper).ok;
const isRoot = process.getuid?.() === 0;

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

interface World {
  base: string;
  ws: string;
  state: string;
  report: string;
}

/** A workspace with a repository-like .git (config, a hook sample, info/exclude) and an .envrc. */
function world(): World {
  const base = mkdtempSync(path.join(os.tmpdir(), 'aleph-guard-'));
  dirs.push(base);
  const ws = path.join(base, 'ws');
  const state = path.join(base, 'state');
  mkdirSync(path.join(ws, '.git', 'hooks'), { recursive: true });
  mkdirSync(path.join(ws, '.git', 'info'), { recursive: true });
  mkdirSync(path.join(ws, '.git', 'objects'), { recursive: true });
  mkdirSync(state, { mode: 0o700 });
  mkdirSync(path.join(base, 'quarantine'), { mode: 0o700 });
  writeFileSync(path.join(ws, '.git', 'HEAD'), 'ref: refs/heads/main\n');
  writeFileSync(path.join(ws, '.git', 'config'), '[core]\n\tbare = false\n');
  writeFileSync(path.join(ws, '.git', 'hooks', 'pre-commit.sample'), '#!/bin/sh\nexit 0\n', { mode: 0o755 });
  writeFileSync(path.join(ws, '.git', 'info', 'exclude'), '# excludes\n');
  writeFileSync(path.join(ws, '.envrc'), 'export HOST=1\n', { mode: 0o640 });
  // Originals a minute old, so an mtime put back is told from a new one.
  const old = new Date(Date.now() - 60_000);
  for (const f of ['.git/config', '.git/hooks/pre-commit.sample', '.envrc'])
    utimesSync(path.join(ws, f), old, old);
  return { base, ws, state, report: path.join(base, 'report') };
}

/** The launcher's arguments up to `--`: the state, the root, its check, the quarantine and a guard per
 * protected path. */
function launchArgs(
  w: World,
  rels: readonly string[] = DEFAULT_PROTECTED_PATHS,
  report = w.report,
): string[] {
  return [
    '--launch',
    '--state',
    w.state,
    '--open',
    'p0',
    w.ws,
    '--check-root',
    'p0',
    '--quarantine',
    path.join(w.base, 'quarantine', 'session'),
    ...rels.flatMap((rel) => ['--guard', 'p0', rel]),
    '--report',
    report,
  ];
}

interface Launched {
  readonly child: ChildProcess;
  /** The exit code, and what the launcher said on stderr. */
  readonly ended: Promise<{ code: number | null; stderr: string }>;
}

function start(w: World, script: string, rels?: readonly string[], report?: string): Launched {
  const child = spawn(helper, [...launchArgs(w, rels, report), '--', '/bin/sh', '-c', script], {
    cwd: w.ws,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr?.on('data', (c) => {
    stderr += c;
  });
  const ended = new Promise<{ code: number | null; stderr: string }>((resolve) =>
    child.on('close', (code) => resolve({ code, stderr })),
  );
  return { child, ended };
}

async function exitCode(launched: Launched): Promise<number | null> {
  const { code, stderr } = await launched.ended;
  if (code !== 0) throw new Error(`the launcher exited ${code}: ${stderr}`);
  return code;
}

/** Runs `script` as the command (in the workspace); the report's lines (`quarantined PATH`, without where
 * it went: that is the quarantine's copy, see {@link aside}). */
async function run(w: World, script: string, rels?: readonly string[]): Promise<string[]> {
  expect(await exitCode(start(w, script, rels))).toBe(0);
  return reportLines(w.report);
}

function reportLines(file: string): string[] {
  return reportOf(file)
    .split('\n')
    .filter(Boolean)
    .map((line) => line.split('\t')[0] as string);
}

/** A launcher report: the launcher writes the file only when it has something to report. */
function reportOf(file: string): string {
  return existsSync(file) ? readFileSync(file, 'utf8') : '';
}

async function until(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 200 && !check(); i++) await sleep(25);
  if (!check()) throw new Error(`timed out waiting for ${what}`);
}

const read = (w: World, rel: string) => readFileSync(path.join(w.ws, rel), 'utf8');
/** Where the copy of what was set aside at REL went: the session's quarantine, at the same path. */
const aside = (w: World, rel: string) => path.join(w.base, 'quarantine', 'session', w.ws, rel);
/** The snapshot files the state directory holds, a manifest and its data (the last run on a root removes them). */
const snapshots = (w: World) => readdirSync(w.state).filter((n) => n.startsWith('guard-'));

describe.runIf(usable)(
  'the tier 3 guard of protected paths (the real launcher) [needs the built helper]',
  () => {
    it('puts back what the command changed, sets aside what it created, and keeps no snapshot after the run', async () => {
      const w = world();
      const before = {
        config: read(w, '.git/config'),
        envrc: statSync(path.join(w.ws, '.envrc')),
        sample: statSync(path.join(w.ws, '.git/hooks/pre-commit.sample')),
      };
      const report = await run(
        w,
        [
          "printf '#!/bin/sh\\necho planted\\n' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit",
          'printf "[core]\\n\\tfsmonitor = /tmp/planted\\n" >> .git/config',
          'echo planted >> .envrc',
          'mkdir .aleph && echo planted > .aleph/config.toml',
          'echo planted > .npmrc',
          'echo "* filter=planted" > .git/info/attributes',
        ].join(' && '),
      );
      const at = (rel: string) => path.join(w.ws, rel);
      expect(report).toEqual(
        expect.arrayContaining(
          ['.git/hooks', '.git/config', '.git/info', '.envrc'].flatMap((rel) => [
            `quarantined ${at(rel)}`,
            `restored ${at(rel)}`,
          ]),
        ),
      );
      expect(report).toEqual(
        expect.arrayContaining([`quarantined ${at('.aleph')}`, `quarantined ${at('.npmrc')}`]),
      );
      expect(report).toHaveLength(10);
      // The originals are back, byte for byte, with their mode and mtime; nothing planted is where it is read.
      expect(read(w, '.git/config')).toBe(before.config);
      expect(existsSync(at('.git/hooks/pre-commit'))).toBe(false);
      expect(existsSync(at('.git/info/attributes'))).toBe(false);
      expect(read(w, '.git/info/exclude')).toBe('# excludes\n');
      expect(read(w, '.envrc')).toBe('export HOST=1\n');
      for (const [rel, st] of [
        ['.envrc', before.envrc],
        ['.git/hooks/pre-commit.sample', before.sample],
      ] as const) {
        const now = statSync(at(rel));
        expect([rel, now.mode, now.mtimeMs]).toEqual([rel, st.mode, st.mtimeMs]);
      }
      expect(existsSync(at('.aleph'))).toBe(false);
      expect(existsSync(at('.npmrc'))).toBe(false);
      // What the command wrote is kept aside, where no tool reads it.
      expect(readFileSync(path.join(aside(w, '.git/hooks'), 'pre-commit'), 'utf8')).toMatch(/planted/);
      expect(readFileSync(aside(w, '.git/config'), 'utf8')).toMatch(/fsmonitor = \/tmp\/planted/);
      expect(readFileSync(path.join(aside(w, '.aleph'), 'config.toml'), 'utf8')).toBe('planted\n');
      expect(snapshots(w)).toEqual([]);
    });

    it('reports nothing when the command only read them, or rewrote them with the same bytes', async () => {
      const w = world();
      const report = await run(
        w,
        'cat .git/config .envrc > /dev/null && cp .git/config c && mv c .git/config && cp .envrc e && mv e .envrc && ls .git/hooks > /dev/null && echo work > work.txt',
      );
      expect(report).toEqual([]);
      expect(read(w, 'work.txt')).toBe('work\n');
    });

    it('a chmod alone is a change: a hook made executable is set aside', async () => {
      const w = world();
      chmodSync(path.join(w.ws, '.git/hooks/pre-commit.sample'), 0o644);
      const report = await run(w, 'chmod +x .git/hooks/pre-commit.sample');
      expect(report).toEqual([`quarantined ${w.ws}/.git/hooks`, `restored ${w.ws}/.git/hooks`]);
      expect(statSync(path.join(w.ws, '.git/hooks/pre-commit.sample')).mode & 0o777).toBe(0o644);
    });

    it('a protected path or a directory on the way swapped for a symlink is set aside (git and direnv follow them)', async () => {
      const w = world();
      const evil = path.join(w.base, 'evil');
      mkdirSync(path.join(evil, 'fish'), { recursive: true });
      writeFileSync(path.join(evil, 'fish', 'config.fish'), 'planted\n');
      mkdirSync(path.join(w.ws, '.config', 'fish'), { recursive: true });
      writeFileSync(path.join(w.ws, '.config', 'fish', 'config.fish'), 'host\n');
      const report = await run(
        w,
        `rm -rf .git/hooks && ln -s ${evil} .git/hooks && mv .config .config-host && ln -s ${evil} .config`,
        [...DEFAULT_PROTECTED_PATHS, '.config/fish'],
      );
      // The .git/hooks symlink is reported as leading out too unless it took the inode number of the
      // directory it replaced (the check after the run skips what was read-only by device and inode): which
      // one the filesystem hands out depends on what else was made and removed there meanwhile.
      expect(report.filter((l) => l !== `symlink ${w.ws}/.git/hooks`)).toEqual([
        // The check after the run sees the symlink first (it leads out of the workspace), then the guard.
        `symlink ${w.ws}/.config`,
        `quarantined ${w.ws}/.git/hooks`,
        `restored ${w.ws}/.git/hooks`,
        `quarantined ${w.ws}/.config`,
        `unrestored ${w.ws}/.config: the directory was removed, renamed or replaced`,
      ]);
      expect(lstatSync(path.join(w.ws, '.git/hooks')).isDirectory()).toBe(true);
      expect(existsSync(path.join(w.ws, '.config'))).toBe(false);
    });

    it('the check after the run alone (tiers 1 and 2) sets aside a .git symlink made during the run, which git would follow', async () => {
      const w = world();
      rmSync(path.join(w.ws, '.git'), { recursive: true });
      mkdirSync(path.join(w.ws, 'd'));
      const report = await run(w, 'mkdir planted && ln -s planted .git && ln -s ../planted d/.git', []);
      expect(report).toEqual([`quarantined ${w.ws}/.git`, `quarantined ${w.ws}/d/.git`]);
      expect(existsSync(path.join(w.ws, '.git'))).toBe(false);
      expect(existsSync(path.join(w.ws, 'd/.git'))).toBe(false);
    });

    it('what is set aside leaves the repository for the quarantine: one copy per path, the later replacing the earlier, never executable', async () => {
      const w = world();
      mkdirSync(path.join(w.ws, '.git/modules'));
      const long = 'm'.repeat(250);
      const plant = [
        "printf '#!/bin/sh\\necho planted\\n' > .git/hooks/pre-commit && chmod 4755 .git/hooks/pre-commit",
        `mkdir -p .git/modules/${long} && echo "ref: x" > .git/modules/${long}/HEAD`,
      ].join(' && ');
      const first = await run(w, `${plant} && echo first > .git/hooks/which`);
      expect(first).toEqual(
        expect.arrayContaining([
          `quarantined ${w.ws}/.git/hooks`,
          `restored ${w.ws}/.git/hooks`,
          `quarantined ${w.ws}/.git/modules/${long}`,
        ]),
      );
      await run(w, `${plant} && echo second > .git/hooks/which`);
      // Nothing is left beside the originals; the quarantine holds the second plant only.
      expect(readdirSync(path.join(w.ws, '.git')).sort()).toEqual([
        'HEAD',
        'config',
        'hooks',
        'info',
        'modules',
        'objects',
      ]);
      expect(readdirSync(path.join(w.ws, '.git/modules'))).toEqual([]);
      expect(readFileSync(path.join(aside(w, '.git/hooks'), 'which'), 'utf8')).toBe('second\n');
      const hook = statSync(path.join(aside(w, '.git/hooks'), 'pre-commit'));
      expect(hook.mode & 0o7777).toBe(0o600);
      expect(statSync(aside(w, '.git/hooks')).mode & 0o7777).toBe(0o700);
      expect(existsSync(aside(w, `.git/modules/${long}/HEAD`))).toBe(true);
    });

    it('a .git swapped for a symlink to a planted repository is set aside, and the lost originals are said', async () => {
      const w = world();
      const report = await run(w, 'mv .git .git-host && mkdir planted && ln -s planted .git');
      expect(report).toEqual([
        `quarantined ${w.ws}/.git`,
        `unrestored ${w.ws}/.git: the directory was removed, renamed or replaced`,
      ]);
      expect(existsSync(path.join(w.ws, '.git'))).toBe(false);
    });

    it("in .git/modules each git directory's control files are units of their own; objects are left alone and a new git directory is set aside", async () => {
      const w = world();
      const x = path.join(w.ws, '.git/modules/x');
      mkdirSync(path.join(x, 'objects/ab'), { recursive: true });
      mkdirSync(path.join(x, 'hooks'));
      writeFileSync(path.join(x, 'HEAD'), 'ref: refs/heads/main\n');
      writeFileSync(path.join(x, 'config'), '[core]\n\tworktree = ../../../x\n');
      const report = await run(
        w,
        [
          'echo "[core] fsmonitor = /tmp/planted" >> .git/modules/x/config',
          'echo data > .git/modules/x/objects/ab/cdef && echo ref > .git/modules/x/HEAD',
          'mkdir -p .git/modules/y && echo "ref: x" > .git/modules/y/HEAD',
        ].join(' && '),
      );
      expect(report).toEqual([
        `quarantined ${w.ws}/.git/modules/y`,
        `quarantined ${w.ws}/.git/modules/x/config`,
        `restored ${w.ws}/.git/modules/x/config`,
      ]);
      expect(readFileSync(path.join(x, 'config'), 'utf8')).toBe('[core]\n\tworktree = ../../../x\n');
      expect(readFileSync(path.join(x, 'objects/ab/cdef'), 'utf8')).toBe('data\n');
      expect(readFileSync(path.join(x, 'HEAD'), 'utf8')).toBe('ref\n');
    });

    it('runs that overlap share the snapshot the first one took, so a later one cannot bring back what an earlier one planted', async () => {
      const w = world();
      const reportB = path.join(w.base, 'report-b');
      // A plants a hook and ends once B has started; B ends after A's check took the hook away.
      const a = start(
        w,
        "printf '#!/bin/sh\\necho planted\\n' > .git/hooks/pre-commit && touch a-planted && i=0; while [ ! -e b-started ] && [ $i -lt 250 ]; do sleep 0.02; i=$((i+1)); done",
      );
      await until(() => existsSync(path.join(w.ws, 'a-planted')), 'the plant of A');
      const b = start(
        w,
        'touch b-started; i=0; while [ -e .git/hooks/pre-commit ] && [ $i -lt 250 ]; do sleep 0.02; i=$((i+1)); done',
        undefined,
        reportB,
      );
      expect(await exitCode(a)).toBe(0);
      expect(await exitCode(b)).toBe(0);
      expect(reportOf(w.report)).toMatch(/^restored .*\/\.git\/hooks$/m);
      expect(existsSync(path.join(w.ws, '.git/hooks/pre-commit'))).toBe(false);
      expect(reportOf(reportB)).toBe('');
      expect(snapshots(w)).toEqual([]);
    });

    it('a snapshot left by a killed launcher is checked when the next run starts', async () => {
      const w = world();
      const killed = start(w, 'echo planted >> .git/config && touch planted && exec sleep 30');
      await until(() => existsSync(path.join(w.ws, 'planted')), 'the plant');
      killed.child.kill('SIGKILL');
      await killed.ended;
      expect(read(w, '.git/config')).toMatch(/planted/);
      expect(snapshots(w)).toHaveLength(2);
      // Checked when the next run starts, before it takes its own snapshot: a run that plants nothing
      // still reports it, and it stays undone whatever that run does.
      expect(await exitCode(start(w, 'cat .git/config > seen'))).toBe(0);
      expect(read(w, 'seen')).toBe('[core]\n\tbare = false\n');
      expect(reportLines(w.report)).toEqual([
        // The killed run's record (launcher/inflight.c): its root walked again, nothing left to set aside.
        `earlier-checked ${w.ws}`,
        `quarantined ${w.ws}/.git/config`,
        `restored ${w.ws}/.git/config`,
      ]);
      expect(read(w, '.git/config')).toBe('[core]\n\tbare = false\n');
      expect(snapshots(w)).toEqual([]);
    });

    it('a protected path too large for the snapshot: what changed in it is set aside entry by entry, and said', async () => {
      const w = world();
      const idea = path.join(w.ws, '.idea');
      mkdirSync(idea);
      writeFileSync(path.join(idea, 'big.bin'), Buffer.alloc(9 * 1024 * 1024, 1));
      writeFileSync(path.join(idea, 'workspace.xml'), '<host/>\n');
      const report = await run(w, 'echo "<planted/>" > .idea/tasks.xml && echo x >> .idea/workspace.xml');
      expect(report).toEqual([
        `quarantined ${idea}/tasks.xml`,
        `quarantined ${idea}/workspace.xml`,
        expect.stringMatching(new RegExp(`^unrestored ${idea}: larger than a snapshot keeps`)),
      ]);
      expect(statSync(path.join(idea, 'big.bin')).size).toBe(9 * 1024 * 1024);
      expect(existsSync(path.join(idea, 'tasks.xml'))).toBe(false);
    });

    it.runIf(isRoot)('on a root host the original owner comes back too [root only: chown]', async () => {
      const w = world();
      chownSync(path.join(w.ws, '.envrc'), 65534, 65534);
      const report = await run(w, 'rm .envrc && echo planted > .envrc');
      expect(report).toEqual([`quarantined ${w.ws}/.envrc`, `restored ${w.ws}/.envrc`]);
      const st = statSync(path.join(w.ws, '.envrc'));
      expect([st.uid, st.gid, st.mode & 0o777]).toEqual([65534, 65534, 0o640]);
    });

    it('a guard without a state directory is refused before anything runs', () => {
      const w = world();
      const r = spawnSync(
        helper,
        ['--launch', '--open', 'p0', w.ws, '--guard', 'p0', '.envrc', '--', '/bin/true'],
        {
          encoding: 'utf8',
        },
      );
      expect(r.status).toBe(125);
      expect(r.stderr).toMatch(/--guard needs --state/);
    });
  },
);
