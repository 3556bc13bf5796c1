import { spawnSync } from 'node:child_process';
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
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { checkHelperSync, resolveHelperPath } from '../src/index.js';

/**
 * The check after the run (native/linux/after-run/check.c), by the real launcher around a program that is
 * not sandboxed: the program plays the command. Each case runs with the change journal (root only: it needs
 * CAP_SYS_ADMIN) and with the complete walk, and both must come to the same report.
 */

const helper = resolveHelperPath();
const usable = process.platform === 'linux' && checkHelperSync(helper).ok;
const isRoot = process.getuid?.() === 0;
const methods = isRoot ? (['journal', 'walk'] as const) : (['walk'] as const);

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

interface World {
  base: string;
  ws: string;
  state: string;
  quarantine: string;
}

function world(): World {
  const base = mkdtempSync(path.join(os.tmpdir(), 'aleph-after-run-'));
  dirs.push(base);
  const w = {
    base,
    ws: path.join(base, 'ws'),
    state: path.join(base, 'state'),
    quarantine: path.join(base, 'quarantine', 'session'),
  };
  mkdirSync(w.ws);
  mkdirSync(w.state, { mode: 0o700 });
  mkdirSync(path.dirname(w.quarantine), { mode: 0o700 });
  return w;
}

const git = (cwd: string, ...args: string[]) => {
  const r = spawnSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@t', ...args], {
    cwd,
    encoding: 'utf8',
  });
  if (r.status !== 0) throw new Error(`git ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
};

/** Runs SCRIPT as the command in W's workspace; the report's lines (a quarantine line without where). */
function run(w: World, method: 'journal' | 'walk', script: string, as?: number): string[] {
  // File times come from the kernel's coarse clock: what the host wrote in the tick the run starts may be
  // taken for the run's own (and set aside, the safe side). What each test planted is from before the run.
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 50);
  const report = path.join(w.base, `report-${Math.random().toString(36).slice(2)}`);
  const args = [
    '--launch',
    '--state',
    w.state,
    '--open',
    'p0',
    w.ws,
    '--check-root',
    'p0',
    ...(method === 'journal' ? ['--journal'] : []),
    '--quarantine',
    w.quarantine,
    '--report',
    report,
    '--',
    '/bin/sh',
    '-c',
    script,
  ];
  const argv =
    as === undefined
      ? [helper, ...args]
      : ['setpriv', `--reuid=${as}`, `--regid=${as}`, '--clear-groups', helper, ...args];
  const r = spawnSync(argv[0] as string, argv.slice(1), { cwd: w.ws, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`the launcher exited ${r.status}: ${r.stderr}`);
  if (!existsSync(report)) return [];
  return readFileSync(report, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => (l.startsWith('quarantined ') ? (l.split('\t')[0] as string) : l));
}

describe.runIf(usable)('the check after the run (the real launcher) [needs the built helper]', () => {
  for (const method of methods) {
    describe(`by ${method === 'journal' ? 'the change journal' : 'the complete walk'}`, () => {
      it('a repository 300 levels deep (more than the walk keeps descriptors for): its control files go, its objects stay', () => {
        const w = world();
        const deep = Array.from({ length: 300 }, () => 'd').join('/');
        const report = run(
          w,
          method,
          `mkdir -p ${deep}/r && cd ${deep}/r && git init -q && git config core.fsmonitor /bin/false && echo x > f && git add f`,
        );
        const r = path.join(w.ws, deep, 'r/.git');
        expect(report.sort()).toEqual(['config', 'hooks', 'info'].map((n) => `quarantined ${r}/${n}`).sort());
        expect(existsSync(path.join(r, 'objects'))).toBe(true);
        expect(existsSync(path.join(r, 'index'))).toBe(true);
      });

      it('a repository beneath a directory the run left read-only, a locked directory in its hooks, is found', () => {
        const w = world();
        // The walk opens a directory its listing names before it decides about it: the modes the run left
        // on the way (read-only, unreadable) change nothing it finds.
        const report = run(
          w,
          method,
          'mkdir -p a/b/c && git init -q a/b/c/r && mkdir a/b/c/r/.git/hooks/sub && chmod 000 a/b/c/r/.git/hooks/sub && chmod 500 a/b/c',
        );
        const r = path.join(w.ws, 'a/b/c/r/.git');
        expect(report.sort()).toEqual(['config', 'hooks', 'info'].map((n) => `quarantined ${r}/${n}`).sort());
        expect(existsSync(path.join(r, 'objects'))).toBe(true);
        chmodSync(path.join(w.ws, 'a/b/c'), 0o700);
      });

      it('a directory that becomes a git directory in a later run loses the config an earlier run left in it', () => {
        const w = world();
        // Not a git directory yet: a config file is just a file.
        expect(
          run(w, method, 'mkdir x && printf "[core]\\n\\tfsmonitor = /bin/false\\n" > x/config'),
        ).toEqual([]);
        const report = run(w, method, 'echo "ref: refs/heads/main" > x/HEAD && mkdir x/objects x/refs');
        expect(report).toEqual([`quarantined ${w.ws}/x/config`]);
      });

      it('a repository known before the run keeps its control files when the run only uses it', () => {
        const w = world();
        git(w.ws, 'init', '-q', '-b', 'main', 'nested');
        git(path.join(w.ws, 'nested'), 'commit', '--allow-empty', '-qm', 'one');
        const report = run(
          w,
          method,
          'cd nested && git checkout -q -b other && git -c user.name=t -c user.email=t@t commit --allow-empty -qm two',
        );
        expect(report).toEqual([]);
        expect(readFileSync(path.join(w.ws, 'nested/.git/config'), 'utf8')).not.toBe('');
      });

      it('an in-place edit of .git/modules/<name>/config of an existing nested repository is set aside', () => {
        const w = world();
        const sub = path.join(w.ws, 'nested/.git/modules/m');
        mkdirSync(path.join(sub, 'objects'), { recursive: true });
        mkdirSync(path.join(sub, 'refs'));
        writeFileSync(path.join(sub, 'HEAD'), 'ref: refs/heads/main\n');
        writeFileSync(path.join(sub, 'config'), '[core]\n\tbare = false\n');
        git(w.ws, 'init', '-q', 'nested');
        expect(
          run(w, method, 'printf "\\tfsmonitor = /bin/false\\n" >> nested/.git/modules/m/config'),
        ).toEqual([`quarantined ${sub}/config`]);
      });

      it('a split git directory (HEAD and commondir here, objects, refs and config there) loses both sides', () => {
        const w = world();
        const report = run(
          w,
          method,
          'mkdir -p a b/objects b/refs && echo "ref: refs/heads/main" > a/HEAD && echo ../b > a/commondir && printf "[core]\\n\\tfsmonitor = /bin/false\\n" > b/config && mkdir b/hooks',
        );
        expect(report.sort()).toEqual(
          [
            `quarantined ${w.ws}/a/commondir`,
            `quarantined ${w.ws}/b/config`,
            `quarantined ${w.ws}/b/hooks`,
          ].sort(),
        );
      });

      it('set-id bits are cleared on what the run made or changed, a hard link and an inode whose name was removed included', () => {
        const w = world();
        writeFileSync(path.join(w.ws, 'tool'), '#!/bin/sh\n', { mode: 0o755 });
        const report = run(
          w,
          method,
          'cp /bin/true t && chmod 6755 t && ln t t2 && cp /bin/true u && chmod 4755 u && ln u kept && rm u',
        );
        for (const f of ['t', 't2', 'kept']) expect(statSync(path.join(w.ws, f)).mode & 0o7777).toBe(0o755);
        expect(report.filter((l) => l.startsWith('setid ')).length).toBeGreaterThan(0);
        expect(statSync(path.join(w.ws, 'tool')).mode & 0o7777).toBe(0o755);
      });

      it('symlinks leading out are reported (outside, dangling, a loop); those inside are not', () => {
        const w = world();
        const report = run(
          w,
          method,
          'ln -s /etc/passwd out && ln -s ../../.. up && ln -s /nonexistent-aleph/x dangling && ln -s loop2 loop1 && ln -s loop1 loop2 && touch f && ln -s f in && mkdir d && ln -s ../f d/in2',
        );
        expect(report.filter((l) => l.startsWith('symlink ')).sort()).toEqual(
          [
            `symlink ${w.ws}/dangling\t/nonexistent-aleph/x\tdangling`,
            `symlink ${w.ws}/loop1\tloop2\tunresolvable`,
            `symlink ${w.ws}/loop2\tloop1\tunresolvable`,
            `symlink ${w.ws}/out\t/etc/passwd\toutside`,
            `symlink ${w.ws}/up\t../../..\toutside`,
          ].sort(),
        );
      });

      it('the gitlinks of an index of version 2, 3 or 4 are followed without falling back to a walk', () => {
        for (const version of ['2', '3', '4']) {
          const w = world();
          git(w.ws, 'init', '-q', '-b', 'main');
          for (let i = 0; i < 30; i++) writeFileSync(path.join(w.ws, `file-${i}-${'x'.repeat(i)}`), `${i}\n`);
          git(w.ws, 'add', '-A');
          git(w.ws, 'commit', '-qm', 'files');
          git(w.ws, 'update-index', '--index-version', version);
          const sha = git(w.ws, 'rev-parse', 'HEAD').trim();
          const report = run(
            w,
            method,
            `mkdir sub && git update-index --add --cacheinfo 160000,${sha},sub && git add -N file-1-x 2>/dev/null; true`,
          );
          expect([version, report.filter((l) => l.startsWith('walked'))]).toEqual([version, []]);
        }
      });
    });
  }

  it.runIf(isRoot)(
    'a file of a known repository rewritten through a shared mapping (no write event) is set aside [root only: the journal]',
    () => {
      const w = world();
      git(w.ws, 'init', '-q', 'nested');
      const py =
        "import mmap,os; f=os.open('nested/.git/config',os.O_RDWR); m=mmap.mmap(f,0); os.close(f); m[0:1]=b'#'; m.flush(); m.close()";
      expect(run(w, 'journal', `python3 -c "${py}"`)).toEqual([`quarantined ${w.ws}/nested/.git/config`]);
    },
  );

  it('a root with no git directory keeps a whole registry after its first run, so the next runs do not walk it before they start', () => {
    const w = world();
    mkdirSync(path.join(w.ws, 'src', 'lib'), { recursive: true });
    expect(run(w, methods[0], 'true')).toEqual([]);
    const kept = readdirSync(w.state).filter((n) => n.startsWith('gitdirs-'));
    expect(kept.map((n) => readFileSync(path.join(w.state, n), 'utf8'))).toEqual(['aleph-gitdirs 1\nend\n']);
    // And a repository made later is still found as new: its control files go.
    expect(run(w, methods[0], 'git init -q r')).toEqual(
      expect.arrayContaining([`quarantined ${w.ws}/r/.git/config`, `quarantined ${w.ws}/r/.git/hooks`]),
    );
  });

  it.runIf(isRoot)('what the walk cannot read is set aside whole [root only: setpriv]', () => {
    const w = world();
    chownSync(w.ws, 65534, 65534);
    chownSync(w.base, 65534, 65534);
    chownSync(w.state, 65534, 65534);
    chownSync(path.dirname(w.quarantine), 65534, 65534);
    chmodSync(w.base, 0o755);
    const report = run(w, 'walk', 'mkdir -p locked/in && touch locked/in/f && chmod 000 locked', 65534);
    expect(report).toEqual([
      expect.stringMatching(new RegExp(`^incomplete ${w.ws}/locked: could not be examined`)),
      `quarantined ${w.ws}/locked`,
    ]);
    expect(existsSync(path.join(w.ws, 'locked'))).toBe(false);
    expect(lstatSync(path.join(w.quarantine, w.ws, 'locked')).isDirectory()).toBe(true);
  });
});
