import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { LinuxTierId } from '@aleph/driver-linux';
import { expect } from 'vitest';

/**
 * The agent tasks as data: the generated repository they start from, and for each task its command and
 * what the host must see afterwards. `agent-tasks.test.ts` runs every row as every identity.
 */

export const CLEAN_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';
export const GIT_NAME = 'Host User';
export const GIT_EMAIL = 'host@example.test';
// The host user's ~/.gitconfig: the identity, and what must never reach a sandbox (a credential helper,
// a URL rewrite, an include).
export const HOST_GITCONFIG = [
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
/** Protected paths the generated repository does not have: nothing is ever made in their place. */
export const STUBS = ['.aleph', '.codex', '.agents', '.claude', '.envrc', '.npmrc', '.mcp.json'];

// pytest when the sandbox's python3 (found on the clean PATH) has it, else unittest; never installed here.
const hasPytest =
  spawnSync('python3', ['-m', 'pytest', '--version'], { env: { PATH: CLEAN_PATH } }).status === 0;
const npmVersion = spawnSync('npm', ['--version'], {
  env: { PATH: CLEAN_PATH },
  encoding: 'utf8',
}).stdout.trim();

// ---------------------------------------------------------------------------------------------------
// The generated repository

export const TEMPLATE: Record<string, string> = {
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
export const TEMPLATE_MODES: Record<string, number> = {
  'config/local.env': 0o600,
  config: 0o700,
  scripts: 0o750,
};

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

export interface RunResult {
  status: number | null;
  signal: NodeJS.Signals | null;
  stdout: Buffer;
  stderr: string;
}
export interface TaskContext {
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
export type Pattern = string | RegExp;
export interface Expect {
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
export interface Task {
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

export const TASKS: Task[] = [
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
    // No placeholder of a missing protected path (.aleph, .envrc, .claude, …) is in the command's way: git
    // clean -x removes what it finds, ignored files included, and fails on nothing.
    id: 'git-clean-fdx',
    command:
      'mkdir -p tmpdir node_modules && touch tmpdir/a scratch.txt node_modules/m.js && git clean -fdxq && git status --porcelain --ignored',
    expect: { stdout: '', status: '' },
  },
  {
    // A formatter or linter globbing every file, dotfiles included (`prettier --check .`-style), reads
    // exactly the repository's own files: no empty placeholder of a missing protected path among them.
    id: 'dotfile-glob',
    command:
      "node -e \"const fs=require('fs');const seen=[];const walk=(d)=>{for(const e of fs.readdirSync(d,{withFileTypes:true})){if(e.name==='.git')continue;const p=d+'/'+e.name;if(e.isDirectory())walk(p);else{fs.readFileSync(p);seen.push(p)}}};walk('.');console.log(seen.filter(p=>/^\\.\\/\\.[^/]*$/.test(p)).sort().join(' '))\"",
    expect: { stdout: './.gitignore\n' },
  },
  {
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
        // Only the identity of the host's ~/.gitconfig (after the line recording what the driver wrote).
        '.gitconfig':
          /^# aleph-sandbox wrote [^\n]*\n\[user\]\n\tname = "?Host User"?\n\temail = "?host@example\.test"?\n$/,
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
