import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { gapNames, type LinuxTierId } from '@aleph/driver-linux';
import { sessionKeyToFilename } from '@aleph/sandbox-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { asUid, cliArgvAs, linuxStack, REQUIRED } from '../support.js';
import { identities as allIdentities, asIdentityTitle, declaredGaps, type Identity } from './hosts.js';

/**
 * The "agent tasks" suite (issues 13 and 17): everyday commands an agent runs in a user's own repository,
 * given to the real CLI with `--workspace <repo>`, as every identity of `hosts.ts`: root, an unprivileged
 * uid, and root on each simulated container host (tiers 2 and 3), where only the CLI runs on that host and
 * the checks run on the real one. Each task is a row of data: its command and what the host must see
 * afterwards. For every row the host checks that the job was done, that no pre-existing path changed
 * owner or mode, that new paths belong to the repository's owner, that the tree holds exactly the
 * expected additions and removals (no stubs, no caches), and that its own `git status` still works. A
 * row is skipped only where the identity's tier declares, by name, a gap the row needs (`needs`).
 */

/**
 * Rows that fail because of a sandbox bug, registered with `it.fails` so the suite stays green and turns
 * red once the bug is fixed. An entry is a task id (every identity) or `id@<identity key>` (see hosts.ts).
 */
const KNOWN_BROKEN = new Set<string>([
  // Empty: git-clean and git-stash-untracked failed on the protected-path stubs (EBUSY) until the
  // session's git excludes listed them.
]);

const stack = linuxStack();
const CLEAN_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';
const GIT_NAME = 'Host User';
const GIT_EMAIL = 'host@example.test';
// The host user's ~/.gitconfig: the identity, and what must never reach a sandbox (a credential helper,
// a URL rewrite, an include).
const HOST_GITCONFIG = [
  '[user]',
  `\tname = ${GIT_NAME}`,
  `\temail = ${GIT_EMAIL}`,
  '[credential]',
  '\thelper = store',
  '[url "https://mirror.invalid/"]',
  '\tinsteadOf = https://github.com/',
  '[include]',
  '\tpath = ~/.gitconfig.local',
  '',
].join('\n');
const STUBS = ['.aleph', '.codex', '.agents'];

const self = process.getuid?.() ?? 0;
const identities = allIdentities();

// pytest when the sandbox's python3 (found on the clean PATH) has it, else unittest; never installed here.
const hasPytest =
  spawnSync('python3', ['-m', 'pytest', '--version'], { env: { PATH: CLEAN_PATH } }).status === 0;
const npmVersion = spawnSync('npm', ['--version'], {
  env: { PATH: CLEAN_PATH },
  encoding: 'utf8',
}).stdout.trim();

// ---------------------------------------------------------------------------------------------------
// The generated repository

const TEMPLATE: Record<string, string> = {
  'README.md': '# demo\n\nA small project an agent works on.\n',
  '.gitignore': '__pycache__/\n.pytest_cache/\n.venv/\nnative/hello\nnative/*.o\nnode_modules/\n',
  'pyproject.toml': '[project]\nname = "greet"\nversion = "0.1.0"\n',
  'src/greet/__init__.py': 'from .core import greet\n',
  'src/greet/core.py': 'def greet(name):\n    return f"Hello, {name}!"\n',
  'tests/test_core.py': [
    'import os, sys, unittest',
    'sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))',
    'from greet.core import greet',
    '',
    'class GreetTest(unittest.TestCase):',
    '    def test_greet(self):',
    '        self.assertEqual(greet("Ada"), "Hello, Ada!")',
    '',
    '    def test_empty(self):',
    '        self.assertEqual(greet(""), "Hello, !")',
    '',
    '',
  ].join('\n'),
  'web/package.json': `${JSON.stringify({ name: 'web', version: '1.0.0', type: 'module', scripts: { test: 'node --test' } }, null, 2)}\n`,
  'web/index.js': 'export function add(a, b) {\n  return a + b;\n}\n',
  'web/old.js': 'export const legacy = true;\n',
  'web/test/index.test.js': [
    "import assert from 'node:assert/strict';",
    "import { test } from 'node:test';",
    "import { add } from '../index.js';",
    '',
    "test('adds', () => assert.equal(add(2, 3), 5));",
    "test('adds negatives', () => assert.equal(add(-2, -3), -5));",
    '',
  ].join('\n'),
  'native/hello.c': '#include <stdio.h>\n\nint main(void) {\n  puts("hello from C");\n  return 0;\n}\n',
  'native/Makefile':
    'hello: hello.o\n\tcc -o $@ hello.o\n\nhello.o: hello.c\n\tcc -c -o $@ hello.c\n\nclean:\n\trm -f hello hello.o\n',
  'docs/notes.md': '# notes\n',
  'scripts/run.sh': '#!/bin/sh\necho run-ok\n',
  'config/local.env': 'TOKEN=not-a-real-one\n',
};
// Modes that differ from the umask's, so a changed mode would show.
const TEMPLATE_MODES: Record<string, number> = { 'config/local.env': 0o600, config: 0o700, scripts: 0o750 };

const PATCH = [
  '--- a/web/index.js',
  '+++ b/web/index.js',
  '@@ -1,3 +1,7 @@',
  ' export function add(a, b) {',
  '   return a + b;',
  ' }',
  '+',
  '+export function sub(a, b) {',
  '+  return a - b;',
  '+}',
  '',
].join('\n');

const BINARY = Buffer.concat(
  Array.from({ length: 1024 }, () => Buffer.from(Array.from({ length: 256 }, (_, i) => i))),
);

// ---------------------------------------------------------------------------------------------------
// The table

interface RunResult {
  status: number | null;
  signal: NodeJS.Signals | null;
  stdout: Buffer;
  stderr: string;
}
interface TaskContext {
  repo: string;
  /** The session's HOME on the host (`<HOME>/.aleph/homes/<key>`). */
  home: string;
  /** The granted directory outside the repository (a task with `grant`). */
  grant: string;
  /** Runs host git in the repository as the identity, with the scratch HOME; returns its stdout. */
  git: (...args: string[]) => string;
  /** The tier the identity's host runs commands in. */
  tier: LinuxTierId;
}
type Pattern = string | RegExp;
interface Expect {
  /** Exit code (default 0). */
  exit?: number;
  /** The whole stdout (string: exact) — or a RegExp it must match. */
  stdout?: Pattern;
  /** Contents of repository files afterwards. */
  files?: Record<string, Pattern>;
  /** Paths (outside git's own internals) that appear; a RegExp covers any number of them. */
  added?: Pattern[];
  /** Paths that disappear. */
  removed?: string[];
  /** Pre-existing files whose contents change. */
  changed?: string[];
  /** Pre-existing paths whose mode changes, with the new permission bits. */
  modes?: Record<string, number>;
  /** The host's `git status --porcelain` afterwards. */
  status?: string;
  /** Files in the session home afterwards. */
  home?: Record<string, Pattern>;
  /** Anything else to check from the host. */
  check?: (r: RunResult, ctx: TaskContext) => void;
}
interface Task {
  id: string;
  /** A shell script (`sh -c`), or an argv run directly. */
  command: string | string[];
  input?: string | Buffer;
  /** `--cwd`, relative to the repository. */
  cwd?: string;
  /**
   * Also grant (`--allow-write`) a directory of the identity's outside the repository; `{grant}` in the
   * command names it. It gets the same owner, mode and residue checks as the repository.
   */
  grant?: Pick<Expect, 'added' | 'changed'>;
  /**
   * Gap names (`tierGaps`) of what the task relies on: where the identity's tier declares one of them, the
   * task is skipped, the gap named in its title.
   */
  needs?: string[];
  expect: Expect;
}

const pyCache = /(^|\/)__pycache__(\/|$)/;

const TASKS: Task[] = [
  {
    id: 'grep-read-only',
    command: 'grep -rn "def greet" src',
    expect: { stdout: 'src/greet/core.py:1:def greet(name):\n' },
  },
  {
    id: 'sed-in-place',
    command: "sed -i 's/Hello/Howdy/' src/greet/core.py",
    expect: {
      files: { 'src/greet/core.py': 'def greet(name):\n    return f"Howdy, {name}!"\n' },
      changed: ['src/greet/core.py'],
      status: ' M src/greet/core.py\n',
    },
  },
  {
    id: 'git-apply-from-stdin',
    command: 'git apply && echo applied',
    input: PATCH,
    expect: {
      stdout: 'applied\n',
      files: { 'web/index.js': /export function sub\(a, b\) \{\n {2}return a - b;\n\}\n$/ },
      changed: ['web/index.js'],
      status: ' M web/index.js\n',
    },
  },
  {
    id: 'new-file-in-existing-dir',
    command: `printf 'def farewell(name):\\n    return f"Bye, {name}!"\\n' > src/greet/farewell.py`,
    expect: {
      files: { 'src/greet/farewell.py': 'def farewell(name):\n    return f"Bye, {name}!"\n' },
      added: ['src/greet/farewell.py'],
      status: '?? src/greet/farewell.py\n',
    },
  },
  {
    id: 'new-nested-dirs',
    command: "mkdir -p docs/guide/img && echo '# Guide' > docs/guide/index.md",
    expect: {
      files: { 'docs/guide/index.md': '# Guide\n' },
      added: ['docs/guide', 'docs/guide/img', 'docs/guide/index.md'],
      status: '?? docs/guide/\n',
    },
  },
  {
    id: 'delete-file',
    command: 'rm web/old.js',
    expect: { removed: ['web/old.js'], status: ' D web/old.js\n' },
  },
  {
    id: 'rename-file',
    command: 'mv docs/notes.md docs/NOTES.md',
    expect: {
      files: { 'docs/NOTES.md': '# notes\n' },
      added: ['docs/NOTES.md'],
      removed: ['docs/notes.md'],
      status: ' D docs/notes.md\n?? docs/NOTES.md\n',
    },
  },
  {
    id: 'symlink-and-hardlink-inside',
    command:
      'ln -s ../README.md docs/readme-link && ln README.md README.copy && cat docs/readme-link | head -1',
    expect: {
      stdout: '# demo\n',
      added: ['docs/readme-link', 'README.copy'],
      status: '?? README.copy\n?? docs/readme-link\n',
    },
  },
  {
    id: 'git-mv',
    command: 'git mv web/old.js web/legacy.js && git status --porcelain',
    expect: {
      stdout: 'R  web/old.js -> web/legacy.js\n',
      added: ['web/legacy.js'],
      removed: ['web/old.js'],
      status: 'R  web/old.js -> web/legacy.js\n',
    },
  },
  {
    id: 'chmod-script-and-run',
    command: 'chmod +x scripts/run.sh && ./scripts/run.sh',
    expect: { stdout: 'run-ok\n', modes: { 'scripts/run.sh': 0o755 }, status: ' M scripts/run.sh\n' },
  },
  {
    id: 'git-status',
    command: 'echo more >> README.md && git status --porcelain',
    expect: { stdout: ' M README.md\n', changed: ['README.md'], status: ' M README.md\n' },
  },
  {
    id: 'git-diff',
    command: 'echo more >> README.md && git diff --stat',
    expect: { stdout: /README\.md \| 1 \+\n 1 file changed, 1 insertion\(\+\)\n$/, changed: ['README.md'] },
  },
  {
    id: 'git-log',
    command: 'git log --oneline | wc -l',
    expect: { stdout: '1\n', status: '' },
  },
  {
    id: 'git-add-commit',
    command:
      "echo more >> README.md && git add README.md && git commit -qm 'agent commit' && git log -1 --format='%an <%ae>|%s'",
    expect: {
      stdout: `${GIT_NAME} <${GIT_EMAIL}>|agent commit\n`,
      changed: ['README.md'],
      status: '',
      check: (_r, { git }) => {
        expect(git('log', '--format=%an <%ae> %s')).toBe(
          `${GIT_NAME} <${GIT_EMAIL}> agent commit\n${GIT_NAME} <${GIT_EMAIL}> initial\n`,
        );
      },
    },
  },
  {
    id: 'git-commit-new-file',
    command: 'echo x > NEW.txt && git add -A && git commit -qm add && git show --name-only --format= HEAD',
    expect: { stdout: 'NEW.txt\n', added: ['NEW.txt'], status: '' },
  },
  {
    id: 'git-branch-switch',
    command: 'git branch feature && git switch -q feature && git branch --show-current',
    expect: {
      stdout: 'feature\n',
      status: '',
      check: (_r, { git }) => {
        expect(git('branch', '--show-current')).toBe('feature\n');
        expect(git('branch', '--format=%(refname:short)')).toBe('feature\nmain\n');
      },
    },
  },
  {
    id: 'git-stash',
    command: 'echo tmp >> README.md && git stash -q && git stash list | wc -l && git status --porcelain',
    expect: {
      stdout: '1\n',
      status: '',
      check: (_r, { git }) => expect(git('stash', 'list')).toMatch(/^stash@\{0\}: WIP on main: /),
    },
  },
  {
    id: 'git-stash-untracked',
    command: 'echo new > untracked.txt && git stash -u -q && git stash pop -q && git status --porcelain',
    // git 2.39's `stash pop -q` still says "Already up to date." when it restores untracked files.
    expect: {
      stdout: /^(Already up to date\.\n)?\?\? untracked\.txt\n$/,
      added: ['untracked.txt'],
      status: '?? untracked.txt\n',
    },
  },
  {
    id: 'git-restore',
    command: 'echo junk > README.md && git restore README.md && git status --porcelain',
    expect: { stdout: '', status: '' },
  },
  {
    id: 'git-clean',
    command: 'mkdir -p tmpdir && touch tmpdir/a scratch.txt && git clean -fdq && git status --porcelain',
    expect: { stdout: '', status: '' },
  },
  {
    // Without -d, git leaves directories alone, the stubs included.
    id: 'git-clean-files-only',
    command: 'touch scratch.txt && git clean -fq && git status --porcelain',
    expect: { stdout: '', status: '' },
  },
  {
    id: hasPytest ? 'python-tests-pytest' : 'python-tests-unittest (pytest not installed)',
    command: hasPytest ? 'python3 -m pytest -q tests 2>&1' : 'python3 -m unittest discover -s tests 2>&1',
    expect: {
      stdout: hasPytest ? /2 passed/ : /Ran 2 tests[\s\S]*\nOK\n$/,
      added: [pyCache, /^\.pytest_cache(\/|$)/],
      status: '',
    },
  },
  {
    id: 'python-failing-test-exit-code',
    command: "sed -i 's/Hello/Bye/' src/greet/core.py && python3 -m unittest discover -s tests 2>&1",
    expect: { exit: 1, stdout: /FAILED \(failures=2\)/, changed: ['src/greet/core.py'], added: [pyCache] },
  },
  {
    id: 'node-test',
    command: 'cd web && node --test 2>&1',
    expect: { stdout: /# pass 2\n[\s\S]*# fail 0\n/, status: '' },
  },
  {
    id: 'npm-test',
    command: 'cd web && npm test 2>&1',
    expect: { stdout: /# pass 2\n[\s\S]*# fail 0\n/, status: '' },
  },
  {
    id: 'npm-test-with-cwd',
    command: 'npm test 2>&1 && pwd',
    cwd: 'web',
    expect: { stdout: /# pass 2\n[\s\S]*# fail 0\n[\s\S]*\/web\n$/, status: '' },
  },
  {
    id: 'write-grant-outside-repo',
    command:
      'cp native/hello.c {grant}/copy.c && echo more >> {grant}/existing.txt && cat {grant}/existing.txt',
    grant: { added: ['copy.c'], changed: ['existing.txt'] },
    expect: {
      stdout: 'kept\nmore\n',
      check: (_r, { grant }) =>
        expect(readFileSync(path.join(grant, 'copy.c'), 'utf8')).toBe(TEMPLATE['native/hello.c']),
    },
  },
  {
    id: 'make',
    command: 'make -s --no-print-directory -C native && ./native/hello',
    expect: { stdout: 'hello from C\n', added: ['native/hello', 'native/hello.o'], status: '' },
  },
  {
    id: 'make-clean',
    command:
      'make -s --no-print-directory -C native && make -s --no-print-directory -C native clean && ls native',
    expect: { stdout: 'Makefile\nhello.c\n', status: '' },
  },
  {
    id: 'cc-direct',
    command: 'cc -O2 -o native/hello native/hello.c && ./native/hello',
    expect: { stdout: 'hello from C\n', added: ['native/hello'] },
  },
  {
    id: 'python-venv',
    command:
      "python3 -m venv .venv && .venv/bin/python -c 'import sys; print(sys.prefix != sys.base_prefix)' && .venv/bin/python -m pip --version >/dev/null && echo pip-ok",
    expect: { stdout: 'True\npip-ok\n', added: [/^\.venv(\/|$)/], status: '' },
  },
  {
    id: 'dev-server-python-loopback',
    command: [
      'python3 -m http.server 8765 --bind 127.0.0.1 >/dev/null 2>&1 &',
      'for i in $(seq 1 100); do curl -sf http://127.0.0.1:8765/README.md && break; sleep 0.1; done',
      'kill $!',
    ].join('\n'),
    needs: ['host-network'],
    expect: { stdout: TEMPLATE['README.md'] as string },
  },
  {
    id: 'dev-server-node-loopback',
    command: [
      `node -e "require('http').createServer((q, s) => s.end('node-dev-ok ' + q.url)).listen(8766, '127.0.0.1')" &`,
      'for i in $(seq 1 100); do curl -sf http://127.0.0.1:8766/api && break; sleep 0.1; done',
      'kill $!',
    ].join('\n'),
    needs: ['host-network'],
    expect: { stdout: 'node-dev-ok /api' },
  },
  {
    id: 'long-output-200k-lines',
    command: ['seq', '1', '200000'],
    expect: {
      check: (r) => {
        const lines = r.stdout.toString('utf8').split('\n');
        expect(lines).toHaveLength(200_001);
        expect([lines[0], lines[99_999], lines[199_999], lines[200_000]]).toEqual([
          '1',
          '100000',
          '200000',
          '',
        ]);
      },
    },
  },
  {
    id: 'binary-output',
    command: ['python3', '-c', 'import sys; sys.stdout.buffer.write(bytes(range(256)) * 1024)'],
    expect: { check: (r) => expect(r.stdout.equals(BINARY)).toBe(true) },
  },
  {
    id: 'stdin-sort',
    command: ['sort', '-r'],
    input: 'b\na\nc\n',
    expect: { stdout: 'c\nb\na\n' },
  },
  {
    id: 'stdin-large-to-python',
    command: [
      'python3',
      '-c',
      'import hashlib, sys; d = sys.stdin.buffer.read(); print(len(d), hashlib.sha256(d).hexdigest())',
    ],
    input: BINARY,
    expect: { stdout: `${BINARY.length} ${createHash('sha256').update(BINARY).digest('hex')}\n` },
  },
  {
    id: 'home-and-xdg-cache',
    command:
      'mkdir -p "$XDG_CACHE_HOME/agent-tool" && echo cached > "$XDG_CACHE_HOME/agent-tool/entry" && echo rc > ~/.agentrc && echo "$HOME" && git config --global user.email',
    expect: {
      check: (r, { home, tier }) => {
        // Tier 3 has no mount namespace to show the session's HOME at /run/aleph/home: HOME is its host path.
        const inner = tier === 'direct' ? home : '/run/aleph/home';
        expect(r.stdout.toString('utf8'), r.stderr).toBe(`${inner}\n${GIT_EMAIL}\n`);
      },
      home: {
        '.cache/agent-tool/entry': 'cached\n',
        '.agentrc': 'rc\n',
        // Only the identity of the host's ~/.gitconfig.
        '.gitconfig': /^\[user\]\n\tname = "?Host User"?\n\temail = "?host@example\.test"?\n$/,
      },
    },
  },
  {
    id: 'npm-version',
    command: ['npm', '--version'],
    expect: { stdout: `${npmVersion}\n` },
  },
  {
    id: 'npm-init',
    command: 'mkdir tool && cd tool && npm init -y >/dev/null && node -p "require(\'./package.json\').name"',
    expect: {
      stdout: 'tool\n',
      added: ['tool', 'tool/package.json'],
      status: '?? tool/\n',
      // npm's own directory (logs, cache) is in the session home, not the repository.
      check: (_r, { home }) => expect(existsSync(path.join(home, '.npm'))).toBe(true),
    },
  },
  {
    id: 'exit-code-and-stderr',
    command: 'echo out; echo err >&2; exit 3',
    expect: {
      exit: 3,
      stdout: 'out\n',
      check: (r) => expect(r.stderr).toBe('err\n'),
    },
  },
];

// ---------------------------------------------------------------------------------------------------
// Host-side helpers

interface Entry {
  type: 'file' | 'dir' | 'link' | 'other';
  uid: number;
  gid: number;
  mode: number;
  hash?: string;
}
/** Every path under `root` (relative, `''` for the root itself), by `lstat`, with file hashes. */
function snapshot(root: string): Map<string, Entry> {
  const out = new Map<string, Entry>();
  const walk = (rel: string) => {
    const abs = rel === '' ? root : path.join(root, rel);
    const st = lstatSync(abs);
    const type = st.isFile() ? 'file' : st.isDirectory() ? 'dir' : st.isSymbolicLink() ? 'link' : 'other';
    const entry: Entry = { type, uid: st.uid, gid: st.gid, mode: st.mode & 0o7777 };
    if (type === 'file') entry.hash = createHash('sha1').update(readFileSync(abs)).digest('hex');
    if (type === 'link') entry.hash = readlinkSync(abs);
    out.set(rel, entry);
    if (type === 'dir') for (const name of readdirSync(abs)) walk(rel === '' ? name : `${rel}/${name}`);
  };
  walk('');
  return out;
}

/** What git itself rewrites: may change content, appear or go, but never change owner. */
const GIT_INTERNAL =
  /^\.git\/(index|HEAD|ORIG_HEAD|COMMIT_EDITMSG|packed-refs|FETCH_HEAD|AUTO_MERGE|(objects|refs|logs)(\/.*)?)$/;

const matches = (p: Pattern, s: string) => (typeof p === 'string' ? p === s : p.test(s));

interface Env {
  identity: Identity;
  base: string;
  home: string;
  template: string;
  mountpoint: string;
}

/** argv that runs `argv` as the identity (setpriv for the unprivileged uid). */
function asIdentity(identity: Identity, argv: string[]): string[] {
  return asUid(identity.uid, argv);
}

function hostEnv(home: string): NodeJS.ProcessEnv {
  return { PATH: CLEAN_PATH, HOME: home, LANG: 'C.UTF-8' };
}

/** Runs a host command as the identity, synchronously; throws with its output when it fails. */
function hostRun(env: Env, argv: string[], cwd: string): string {
  const [cmd, ...args] = asIdentity(env.identity, argv) as [string, ...string[]];
  const r = spawnSync(cmd, args, { cwd, env: hostEnv(env.home), encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${argv.join(' ')} failed (${r.status}): ${r.stderr}${r.stdout}`);
  return r.stdout;
}

/** Runs the CLI as the identity, the way a user does, collecting its output as bytes. */
function runCli(
  env: Env,
  args: string[],
  options: { input?: string | Buffer; act?: (child: ChildProcess) => void } = {},
): Promise<RunResult> {
  // On a simulated host only the CLI runs there; the host-side checks run on the real host.
  const argv = [...env.identity.wrap, ...cliArgvAs(env.identity.uid, env.mountpoint, args)];
  return new Promise((resolve) => {
    const [cmd, ...rest] = argv as [string, ...string[]];
    const child = spawn(cmd, rest, { env: hostEnv(env.home), cwd: env.base });
    const out: Buffer[] = [];
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => out.push(c));
    child.stderr.on('data', (c: Buffer) => {
      stderr += c.toString('utf8');
    });
    child.on('close', (status, signal) => resolve({ status, signal, stdout: Buffer.concat(out), stderr }));
    child.stdin.on('error', () => {});
    child.stdin.end(options.input ?? '');
    options.act?.(child);
  });
}

const runArgs = (repo: string, session: string, command: string | string[], extra: string[] = []) => [
  'run',
  '--workspace',
  repo,
  '--session',
  session,
  '--approve',
  'all',
  ...extra,
  '--',
  ...(typeof command === 'string' ? ['sh', '-c', command] : command),
];

/** Gives `dir` and everything in it to the identity (when that is another uid). */
function chownR(env: Env, ...dirs: string[]): void {
  if (env.identity.uid === self) return;
  const r = spawnSync('chown', ['-R', `${env.identity.uid}:${env.identity.uid}`, ...dirs]);
  if (r.status !== 0) throw new Error(`chown failed: ${r.stderr}`);
}

/** Builds the template repository as the identity: files, modes, then `git init` and a first commit. */
function makeTemplate(env: Env): void {
  const t = env.template;
  for (const [rel, content] of Object.entries(TEMPLATE)) {
    mkdirSync(path.dirname(path.join(t, rel)), { recursive: true });
    writeFileSync(path.join(t, rel), content);
  }
  for (const [rel, mode] of Object.entries(TEMPLATE_MODES)) chmodSync(path.join(t, rel), mode);
  chownR(env, t);
  hostRun(env, ['git', 'init', '-q', '-b', 'main', '.'], t);
  hostRun(env, ['git', 'add', '-A'], t);
  hostRun(env, ['git', 'commit', '-qm', 'initial'], t);
}

/** A fresh copy of the template (owner, modes and times kept), named after the task. */
function freshRepo(env: Env, name: string): string {
  const repo = path.join(env.base, `repo-${name.replace(/[^A-Za-z0-9-]/g, '_')}`);
  const r = spawnSync('cp', ['-a', env.template, repo]);
  if (r.status !== 0) throw new Error(`cp -a failed: ${r.stderr}`);
  return repo;
}

/** Polls `cond` for a bounded number of rounds, `ms` apart. */
async function poll(cond: () => boolean, rounds: number, ms = 50): Promise<boolean> {
  for (let i = 0; i < rounds; i++) {
    if (cond()) return true;
    await new Promise((r) => setTimeout(r, ms));
  }
  return cond();
}

/** The host-side checks every task shares: ownership, modes, residue, stubs, host git. */
function checkTree(
  env: Env,
  repo: string,
  before: Map<string, Entry>,
  after: Map<string, Entry>,
  e: Pick<Expect, 'added' | 'removed' | 'changed' | 'modes'>,
): void {
  const owner = before.get('') as Entry;
  expect([owner.uid, owner.gid], 'the repository belongs to the identity').toEqual([
    env.identity.uid,
    env.identity.uid,
  ]);
  // Pre-existing paths: same type, owner and mode (by path: git and sed replace files with new inodes).
  const changedOwnerOrMode: string[] = [];
  const changedContent: string[] = [];
  for (const [rel, was] of before) {
    const now = after.get(rel);
    if (now === undefined) continue;
    const mode = e.modes?.[rel] ?? was.mode;
    if (now.type !== was.type || now.uid !== was.uid || now.gid !== was.gid || now.mode !== mode)
      changedOwnerOrMode.push(
        `${rel || '.'}: ${was.type} ${was.uid}:${was.gid} ${was.mode.toString(8)} -> ${now.type} ${now.uid}:${now.gid} ${now.mode.toString(8)}`,
      );
    if (!GIT_INTERNAL.test(rel) && now.hash !== was.hash) changedContent.push(rel);
  }
  expect(changedOwnerOrMode, 'owners and modes of pre-existing paths').toEqual([]);
  expect(changedContent.sort(), 'pre-existing files whose contents changed').toEqual(
    [...(e.changed ?? [])].sort(),
  );
  // New paths: exactly the expected ones (outside git's internals), all the repository owner's.
  const added = [...after.keys()].filter((p) => !before.has(p));
  const wrongOwner = added
    .map((p) => [p, after.get(p) as Entry] as const)
    .filter(([, s]) => s.uid !== owner.uid || s.gid !== owner.gid)
    .map(([p, s]) => `${p}: ${s.uid}:${s.gid}`);
  expect(wrongOwner, 'new paths belong to the repository owner').toEqual([]);
  const expectedAdded = e.added ?? [];
  const unexpected = added.filter((p) => !GIT_INTERNAL.test(p) && !expectedAdded.some((x) => matches(x, p)));
  expect(unexpected, 'paths nobody asked for (residue)').toEqual([]);
  for (const x of expectedAdded)
    if (typeof x === 'string') expect(after.has(x), `${x} was created`).toBe(true);
  const removed = [...before.keys()].filter((p) => !after.has(p) && !GIT_INTERNAL.test(p));
  expect(removed.sort(), 'removed paths').toEqual([...(e.removed ?? [])].sort());
  // Named explicitly, for a clear message.
  for (const name of [...STUBS, '.cache', '.npm', '.config', '.local'])
    expect(existsSync(path.join(repo, name)), `${name} left in the repository`).toBe(false);
}

function hostGitStatus(env: Env, repo: string): { status: number | null; stdout: string; stderr: string } {
  const [cmd, ...args] = asIdentity(env.identity, ['git', '-C', repo, 'status', '--porcelain']) as [
    string,
    ...string[],
  ];
  const r = spawnSync(cmd, args, { env: hostEnv(env.home), encoding: 'utf8' });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

const sessionHome = (env: Env, session: string) =>
  path.join(env.home, '.aleph', 'homes', sessionKeyToFilename(session));

// ---------------------------------------------------------------------------------------------------

describe.skipIf(!stack.ok && !stack.missing.some((m) => REQUIRED.has(m)))(
  `agent tasks on a generated repository through the CLI${stack.ok ? '' : ` [skipped: ${stack.reason}]`}`,
  () => {
    if (!stack.ok) {
      it('the Linux stack is required here (ALEPH_REQUIRE) but missing', () => {
        throw new Error(`required by ALEPH_REQUIRE but unavailable: ${stack.reason}`);
      });
    }

    for (const identity of identities) {
      describe.skipIf(identity.skip !== undefined)(asIdentityTitle(identity), () => {
        const env: Env = { identity, base: '', home: '', template: '', mountpoint: '' };
        const gaps = new Set(gapNames(declaredGaps(identity)));
        /** `it`, skipped where this tier declares `gap`. */
        const unless = (gap: string) => (gaps.has(gap) ? it.skip : it);
        const suffix = (gap: string) => (gaps.has(gap) ? ` [skipped: the tier declares ${gap}]` : '');

        beforeAll(() => {
          env.base = mkdtempSync(path.join(os.tmpdir(), 'aleph-agent-tasks-'));
          chmodSync(env.base, 0o755);
          env.home = path.join(env.base, 'home');
          env.template = path.join(env.base, 'template');
          env.mountpoint = path.join(env.base, 'checkout');
          mkdirSync(env.mountpoint, { mode: 0o755 });
          mkdirSync(env.home, { mode: 0o700 });
          mkdirSync(env.template, { mode: 0o755 });
          // The HOST user's git identity, in a scratch HOME (never the real one).
          writeFileSync(path.join(env.home, '.gitconfig'), HOST_GITCONFIG);
          chownR(env, env.home, env.template);
          makeTemplate(env);
        });
        afterAll(() => {
          if (env.base !== '') rmSync(env.base, { recursive: true, force: true });
        });

        // The simulated hosts test nothing unless the preflight really picks their tier there.
        it(`runs commands in ${identity.tier}, declaring exactly its gaps`, async () => {
          const repo = freshRepo(env, 'tier');
          const r = await runCli(env, runArgs(repo, 'tier', ['true'], ['--json']));
          expect(r.status, r.stderr).toBe(0);
          const { details } = JSON.parse(r.stdout.toString('utf8')) as {
            details: { tier: string; notEnforced: string[] };
          };
          expect(details.tier).toBe(identity.tier);
          // The tier's gaps come first, then what the limits leave unbounded.
          const expected = declaredGaps(identity);
          expect(details.notEnforced.slice(0, expected.length)).toEqual(expected);
        });

        for (const task of TASKS) {
          const broken = KNOWN_BROKEN.has(task.id) || KNOWN_BROKEN.has(`${task.id}@${identity.key}`);
          const gap = task.needs?.find((name) => gaps.has(name));
          (gap !== undefined ? unless(gap) : broken ? it.fails : it)(
            `${task.id}${gap !== undefined ? suffix(gap) : broken ? ' [known broken]' : ''}`,
            async () => {
              const repo = freshRepo(env, task.id);
              const session = `task-${task.id}`;
              const grant = `${repo}-grant`;
              const extra = ['--allow-spawn'];
              if (task.cwd !== undefined) extra.push('--cwd', task.cwd);
              if (task.grant !== undefined) {
                mkdirSync(grant, { mode: 0o750 });
                writeFileSync(path.join(grant, 'existing.txt'), 'kept\n', { mode: 0o640 });
                chownR(env, grant);
                extra.push('--allow-write', grant);
              }
              const command =
                typeof task.command === 'string' ? task.command.replaceAll('{grant}', grant) : task.command;
              const before = snapshot(repo);
              const grantBefore = task.grant === undefined ? undefined : snapshot(grant);
              const r = await runCli(env, runArgs(repo, session, command, extra), {
                ...(task.input === undefined ? {} : { input: task.input }),
              });
              const e = task.expect;
              const shown = `stdout: ${r.stdout.toString('utf8').slice(0, 2000)}\nstderr: ${r.stderr}`;
              expect(r.status, shown).toBe(e.exit ?? 0);
              if (e.stdout !== undefined) {
                const text = r.stdout.toString('utf8');
                if (typeof e.stdout === 'string') expect(text, r.stderr).toBe(e.stdout);
                else expect(text, r.stderr).toMatch(e.stdout);
              }
              for (const [rel, want] of Object.entries(e.files ?? {})) {
                const text = readFileSync(path.join(repo, rel), 'utf8');
                if (typeof want === 'string') expect(text, rel).toBe(want);
                else expect(text, rel).toMatch(want);
              }
              checkTree(env, repo, before, snapshot(repo), e);
              const status = hostGitStatus(env, repo);
              expect(status.stderr, 'host git status').not.toMatch(/dubious ownership/);
              expect(status.status, status.stderr).toBe(0);
              if (e.status !== undefined) expect(status.stdout, 'host git status --porcelain').toBe(e.status);
              const home = sessionHome(env, session);
              for (const [rel, want] of Object.entries(e.home ?? {})) {
                const text = readFileSync(path.join(home, rel), 'utf8');
                if (typeof want === 'string') expect(text, rel).toBe(want);
                else expect(text, rel).toMatch(want);
              }
              if (grantBefore !== undefined && task.grant !== undefined)
                checkTree(env, grant, grantBefore, snapshot(grant), task.grant);
              e.check?.(r, {
                repo,
                home,
                grant,
                git: (...args) => hostRun(env, ['git', ...args], repo),
                tier: identity.tier,
              });
            },
            120_000,
          );
        }

        // Where the tier declares protected-paths it makes no stubs; the rest of the test holds there too.
        const stubs = !gaps.has('protected-paths');
        it(`a SIGKILLed CLI takes its command with it and leaves ${stubs ? 'no stubs: its supervisor removes them, or at the latest the next run' : 'no residue [no stubs to check: the tier declares protected-paths]'}`, async () => {
          const repo = freshRepo(env, 'sigkill');
          const before = snapshot(repo);
          const tag = `29.${identities.indexOf(identity)}3`;
          let sawStubs = false;
          const r = await runCli(
            env,
            runArgs(repo, 'sigkill', `echo started; exec sleep ${tag}`, ['--allow-spawn']),
            {
              act: (child) => {
                child.stdout?.once('data', async () => {
                  if (stubs)
                    sawStubs = await poll(() => STUBS.every((s) => existsSync(path.join(repo, s))), 100);
                  child.kill('SIGKILL');
                });
              },
            },
          );
          expect(r.signal).toBe('SIGKILL');
          if (stubs) expect(sawStubs, 'the stubs were there while the command ran').toBe(true);
          const gone = () => STUBS.every((s) => !existsSync(path.join(repo, s)));
          const bySupervisor = await poll(gone, 40);
          if (!bySupervisor) {
            const next = await runCli(env, runArgs(repo, 'sigkill', ['true']));
            expect(next.status, next.stderr).toBe(0);
          }
          expect(gone(), `stubs left (supervisor cleaned: ${bySupervisor})`).toBe(true);
          if (stubs)
            console.info(
              `[agent-tasks ${identity.key}] stubs of the SIGKILLed run removed by ${bySupervisor ? "the helper's supervisor" : 'the next run'}`,
            );
          const left = () =>
            spawnSync('pgrep', ['-f', `sleep ${tag}`], { encoding: 'utf8' }).stdout.trim() === '';
          expect(await poll(left, 40), 'the command died with the CLI').toBe(true);
          checkTree(env, repo, before, snapshot(repo), {});
          expect(hostGitStatus(env, repo)).toMatchObject({ status: 0, stdout: '' });
        }, 60_000);

        unless('protected-paths')(
          `two runs at once in one workspace share the stubs: the first to end leaves the other protected, the last removes them${suffix('protected-paths')}`,
          async () => {
            const repo = freshRepo(env, 'overlap');
            const before = snapshot(repo);
            let short: RunResult | undefined;
            let stubsAfterShort: string[] = [];
            // The long run waits (a bounded number of rounds) for the host to say the short one has ended.
            const long = runCli(
              env,
              runArgs(
                repo,
                'overlap',
                [
                  'echo started',
                  'for i in $(seq 1 400); do [ -e go ] && echo go && break; sleep 0.05; done',
                  'rm -f go',
                  'mkdir .aleph/evil 2>/dev/null && echo MADE-DIR',
                  'echo x > .aleph/evil.txt 2>/dev/null && echo WROTE-FILE',
                  'mkdir -p .git/hooks 2>/dev/null; echo evil > .git/hooks/pre-commit 2>/dev/null && echo WROTE-HOOK',
                  'echo done',
                ].join('\n'),
                ['--allow-spawn'],
              ),
              {
                act: (child) => {
                  child.stdout?.once('data', async () => {
                    short = await runCli(env, runArgs(repo, 'overlap', ['true']));
                    stubsAfterShort = STUBS.filter((st) => existsSync(path.join(repo, st)));
                    hostRun(env, ['touch', 'go'], repo);
                  });
                },
              },
            );
            const r = await long;
            expect(r.status, r.stderr).toBe(0);
            expect(short?.status, short?.stderr).toBe(0);
            expect(stubsAfterShort, 'stubs still there for the run that goes on').toEqual(STUBS);
            expect(r.stdout.toString('utf8')).toBe('started\ngo\ndone\n');
            checkTree(env, repo, before, snapshot(repo), {});
          },
          60_000,
        );

        it('a timeout (--timeout 1 on sleep 10) exits 124 and leaves no stubs', async () => {
          const repo = freshRepo(env, 'timeout');
          const before = snapshot(repo);
          const r = await runCli(env, runArgs(repo, 'timeout', ['sleep', '10'], ['--timeout', '1']));
          expect(r.status, r.stderr).toBe(124);
          checkTree(env, repo, before, snapshot(repo), {});
          expect(hostGitStatus(env, repo)).toMatchObject({ status: 0, stdout: '' });
        }, 60_000);
      });
    }
  },
);
