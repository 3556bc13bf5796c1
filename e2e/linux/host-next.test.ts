import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
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
import { asUid, canSwitchUid, cliArgvAs, linuxStack, REQUIRED, repoRoot } from '../support.js';

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

const stack = linuxStack();
const CLEAN_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';
const UNPRIVILEGED = 65534;
const HOST_GITCONFIG = '[user]\n\tname = Host User\n\temail = host@example.test\n';
const HOST_BASHRC = "# the host user's own .bashrc\nexport HOST_BASHRC=1\n";
const self = process.getuid?.() ?? 0;

interface Identity {
  key: 'root' | 'unprivileged';
  name: string;
  uid: number;
  skip: string | undefined;
}
const identities: Identity[] = [
  { key: 'root', name: self === 0 ? 'root' : `the current user (uid ${self})`, uid: self, skip: undefined },
  {
    key: 'unprivileged',
    name: `unprivileged uid ${UNPRIVILEGED} (setpriv)`,
    uid: UNPRIVILEGED,
    skip: canSwitchUid() ? undefined : 'needs root and setpriv',
  },
];

// ---------------------------------------------------------------------------------------------------
// One case's scratch world

/**
 * `dir` (owned by the identity, removed afterwards) holds the scratch HOME at `dir/home/u` (so an
 * ancestor of home can be granted), the trigger script and, once a payload runs, the marker.
 */
interface Ctx {
  identity: Identity;
  mountpoint: string;
  dir: string;
  home: string;
  /** The trigger every payload runs: `#!/bin/sh` that touches `marker`. */
  trigger: string;
  marker: string;
}

interface CliResult {
  status: number | null;
  stdout: string;
  stderr: string;
  json:
    | { exitCode?: number; stdout?: string; stderr?: string; details?: { quarantined?: string[] } }
    | undefined;
}

function asIdentity(identity: Identity, argv: string[]): string[] {
  return asUid(identity.uid, argv);
}

const hostEnv = (ctx: Ctx, pathVar = CLEAN_PATH): NodeJS.ProcessEnv => ({
  PATH: pathVar,
  HOME: ctx.home,
  LANG: 'C.UTF-8',
});

/** Gives `dirs` and everything in them to the identity (when that is another uid). */
function chownR(ctx: Ctx, ...dirs: string[]): void {
  if (ctx.identity.uid === self) return;
  const r = spawnSync('chown', ['-R', `${ctx.identity.uid}:${ctx.identity.uid}`, ...dirs]);
  if (r.status !== 0) throw new Error(`chown failed: ${r.stderr}`);
}

/** A host command as the identity; its outcome, never thrown (the marker is what counts). */
function host(
  ctx: Ctx,
  argv: string[],
  cwd: string,
  pathVar?: string,
): { status: number | null; out: string } {
  const [cmd, ...args] = asIdentity(ctx.identity, argv) as [string, ...string[]];
  const r = spawnSync(cmd, args, { cwd, env: hostEnv(ctx, pathVar), encoding: 'utf8', timeout: 30_000 });
  return { status: r.status, out: `${r.stdout}${r.stderr}` };
}

/** A host command as the identity that must succeed (setup). */
function hostOk(ctx: Ctx, argv: string[], cwd: string): string {
  const r = host(ctx, argv, cwd);
  if (r.status !== 0) throw new Error(`${argv.join(' ')} failed (${r.status}): ${r.out}`);
  return r.out;
}

/** The real CLI as the identity with the scratch HOME; `run --json` results are parsed. */
function runCli(ctx: Ctx, args: string[]): Promise<CliResult> {
  const argv = cliArgvAs(ctx.identity.uid, ctx.mountpoint, args);
  return new Promise((resolve) => {
    const [cmd, ...rest] = argv as [string, ...string[]];
    const child = spawn(cmd, rest, { env: hostEnv(ctx), cwd: ctx.dir });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c) => {
      stdout += c;
    });
    child.stderr.on('data', (c) => {
      stderr += c;
    });
    child.stdin.end('');
    child.on('close', (status) => {
      let json: CliResult['json'];
      try {
        json = JSON.parse(stdout) as CliResult['json'];
      } catch {
        json = undefined;
      }
      resolve({ status, stdout, stderr, json });
    });
  });
}

/** `run --json` of `sh -c command` in `workspace`, subprocesses allowed, everything approved. */
function run(ctx: Ctx, workspace: string, session: string, command: string, extra: string[] = []) {
  return runCli(ctx, [
    'run',
    '--json',
    '--workspace',
    workspace,
    '--session',
    session,
    '--approve',
    'all',
    '--allow-spawn',
    ...extra,
    '--',
    'sh',
    '-c',
    command,
  ]);
}

const shown = (r: CliResult) =>
  `exit ${r.status}\nstdout: ${(r.json?.stdout ?? r.stdout).slice(0, 3000)}\nstderr: ${(r.json?.stderr ?? '') + r.stderr}`;

function makeCtx(identity: Identity, mountpoint: string): Ctx {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'aleph-host-next-'));
  chmodSync(dir, 0o755);
  const home = path.join(dir, 'home', 'u');
  mkdirSync(home, { recursive: true, mode: 0o700 });
  chmodSync(path.join(dir, 'home'), 0o755);
  writeFileSync(path.join(home, '.gitconfig'), HOST_GITCONFIG);
  const marker = path.join(dir, 'marker');
  const trigger = path.join(dir, 'trigger');
  writeFileSync(trigger, `#!/bin/sh\ntouch '${marker}'\ncat >/dev/null 2>&1 </dev/null\n`, { mode: 0o755 });
  const ctx: Ctx = { identity, mountpoint, dir, home, trigger, marker };
  chownR(ctx, dir);
  return ctx;
}

/** Fills `{T}` (the trigger), `{M}` (the marker), `{H}` (the scratch HOME) and `{W}` (the workspace). */
const fill = (ctx: Ctx, s: string, ws = '') =>
  s
    .replaceAll('{T}', ctx.trigger)
    .replaceAll('{M}', ctx.marker)
    .replaceAll('{H}', ctx.home)
    .replaceAll('{W}', ws);

const sha = (file: string) => createHash('sha1').update(readFileSync(file)).digest('hex');

// ---------------------------------------------------------------------------------------------------
// git

/** The `.git` entries git itself may add or rewrite during an ordinary run. */
const GIT_OWN =
  /^(index|HEAD|ORIG_HEAD|COMMIT_EDITMSG|FETCH_HEAD|AUTO_MERGE|packed-refs|objects|refs|logs|index\.lock)$/;

interface GitCase {
  id: string;
  /** The workspace holds no repository (the command creates one). */
  empty?: boolean;
  /** Host-side preparation in the workspace (as the identity), after the first commit. */
  setup?: (ctx: Ctx, ws: string) => void;
  /** The command, `sh -c`; `{T}` the trigger, `{W}` the workspace. */
  command: string;
  /** What the host runs next, each argv in the workspace. */
  next: string[][];
  /** Paths (relative to the workspace) that `details.quarantined` must name. */
  quarantined?: string[];
  /** The row asserts the command succeeded with this stdout pattern. */
  stdout?: RegExp;
  check?: (ctx: Ctx, ws: string) => void;
}

const HOOK = "printf '#!/bin/sh\\nexec {T}\\n'";
const GIT_STATUS = ['git', 'status'];
const GIT_COMMIT = ['git', 'commit', '--allow-empty', '-qm', 'host next'];

const GIT_CASES: GitCase[] = [
  {
    id: 'git-commondir',
    command: [
      'git init -q --bare planted.git',
      'git -C planted.git config core.bare false',
      'git -C planted.git config core.fsmonitor {T}',
      `mkdir -p planted.git/hooks && ${HOOK} > planted.git/hooks/pre-commit && chmod +x planted.git/hooks/pre-commit`,
      'echo "$PWD/planted.git" > .git/commondir',
    ].join('; '),
    next: [GIT_STATUS, GIT_COMMIT],
  },
  {
    id: 'git-hooks-pre-commit',
    command: `${HOOK} > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit`,
    next: [GIT_COMMIT],
  },
  {
    id: 'git-config-fsmonitor',
    command: 'git config core.fsmonitor {T}; echo "[core]\n\tfsmonitor = {T}" >> .git/config',
    next: [GIT_STATUS, ['git', 'diff']],
  },
  {
    id: 'git-config-hookspath',
    command: `mkdir hk && ${HOOK} > hk/pre-commit && chmod +x hk/pre-commit; git config core.hooksPath "$PWD/hk"`,
    next: [GIT_COMMIT],
  },
  {
    id: 'git-config-alias',
    command: "git config alias.l '!{T}'; git config alias.st '!{T}'; git config core.pager {T}",
    next: [GIT_STATUS, ['git', 'log'], ['git', 'l'], ['git', 'st']],
  },
  {
    id: 'git-config-worktree',
    command:
      'printf "[core]\\n\\tfsmonitor = {T}\\n" > .git/config.worktree; git config extensions.worktreeConfig true',
    next: [GIT_STATUS],
  },
  {
    id: 'git-absorbed-submodule',
    setup: (ctx, ws) => {
      const src = path.join(ctx.dir, 'subsrc');
      hostOk(ctx, ['git', 'init', '-q', '-b', 'main', src], ctx.dir);
      hostOk(ctx, ['git', '-C', src, 'commit', '--allow-empty', '-qm', 'sub'], ctx.dir);
      hostOk(ctx, ['git', '-c', 'protocol.file.allow=always', 'submodule', '-q', 'add', src, 'x'], ws);
      hostOk(ctx, ['git', 'commit', '-qm', 'add submodule x'], ws);
      expect(existsSync(path.join(ws, '.git/modules/x/config')), 'the submodule is absorbed').toBe(true);
    },
    command: [
      'git -C x config core.fsmonitor {T}',
      'echo "[core]\n\tfsmonitor = {T}" >> .git/modules/x/config',
      `${HOOK} > .git/modules/x/hooks/pre-commit; chmod +x .git/modules/x/hooks/pre-commit`,
      'mkdir -p .git/modules/y/hooks; echo "[core]\n\tfsmonitor = {T}" > .git/modules/y/config',
    ].join('; '),
    next: [
      GIT_STATUS,
      ['git', 'submodule', 'status'],
      ['git', '-C', 'x', 'status'],
      ['git', '-C', 'x', ...GIT_COMMIT.slice(1)],
    ],
  },
  {
    id: 'git-linked-worktree',
    command: [
      'mkdir -p .git/worktrees/x wtx',
      'echo "ref: refs/heads/main" > .git/worktrees/x/HEAD',
      'echo ../.. > .git/worktrees/x/commondir',
      'echo "$PWD/wtx/.git" > .git/worktrees/x/gitdir',
      'printf "[core]\\n\\tfsmonitor = {T}\\n" > .git/worktrees/x/config.worktree',
      `mkdir -p .git/worktrees/x/hooks; ${HOOK} > .git/worktrees/x/hooks/pre-commit`,
      'echo "gitdir: $PWD/.git/worktrees/x" > wtx/.git',
    ].join('; '),
    next: [GIT_STATUS, ['git', '-C', 'wtx', 'status'], ['git', '-C', 'wtx', ...GIT_COMMIT.slice(1)]],
    quarantined: ['wtx/.git'],
  },
  {
    id: 'git-info-attributes-filter',
    command: [
      'echo "* filter=planted" > .git/info/attributes',
      'echo "* filter=planted" > .gitattributes',
      'git config filter.planted.clean {T}; git config filter.planted.smudge {T}',
      'echo changed >> README.md',
    ].join('; '),
    next: [GIT_STATUS, ['git', 'diff'], ['git', 'add', '-A']],
  },
  {
    id: 'git-gitlink-nested-config',
    command: [
      'git init -q sub',
      'git -C sub commit --allow-empty -qm sub',
      'git update-index --add --cacheinfo 160000,$(git -C sub rev-parse HEAD),sub',
      'git -C sub config core.fsmonitor {T}',
      `${HOOK} > sub/.git/hooks/pre-commit; chmod +x sub/.git/hooks/pre-commit`,
      'git ls-files --stage sub',
    ].join('; '),
    next: [
      GIT_STATUS,
      ['git', 'diff'],
      ['git', '-C', 'sub', 'status'],
      ['git', '-C', 'sub', ...GIT_COMMIT.slice(1)],
    ],
    quarantined: ['sub/.git/config', 'sub/.git/hooks'],
    stdout: /^160000 [0-9a-f]{40} 0\tsub$/m,
  },
  {
    id: 'git-nested-existing',
    setup: (ctx, ws) => {
      hostOk(ctx, ['git', 'init', '-q', '-b', 'main', 'nested'], ws);
      hostOk(ctx, ['git', '-C', 'nested', 'commit', '--allow-empty', '-qm', 'nested'], ws);
    },
    command: `git -C nested config core.fsmonitor {T}; ${HOOK} > nested/.git/hooks/pre-commit; chmod +x nested/.git/hooks/pre-commit`,
    next: [GIT_STATUS, ['git', '-C', 'nested', 'status'], ['git', '-C', 'nested', ...GIT_COMMIT.slice(1)]],
    quarantined: ['nested/.git/config', 'nested/.git/hooks'],
  },
  {
    id: 'git-nested-created',
    command: 'git init -q sub2 && git -C sub2 config core.fsmonitor {T}',
    next: [['git', '-C', 'sub2', 'status'], GIT_STATUS],
    quarantined: ['sub2/.git/config'],
  },
  {
    id: 'git-init-where-none',
    empty: true,
    command: `git init -q && git config core.fsmonitor {T} && ${HOOK} > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit && echo INIT`,
    next: [GIT_STATUS, GIT_COMMIT],
    quarantined: ['.git/config', '.git/hooks'],
    stdout: /INIT/,
  },
  {
    id: 'git-dotgit-symlink',
    empty: true,
    command: [
      'git init -q --bare planted.git',
      'git -C planted.git config core.bare false',
      'git -C planted.git config core.fsmonitor {T}',
      'ln -s planted.git .git && mkdir -p d && ln -s ../planted.git d/.git',
      'echo PLANTED',
    ].join('; '),
    next: [GIT_STATUS, ['git', '-C', 'd', 'status']],
    quarantined: ['.git', 'd/.git'],
    stdout: /PLANTED/,
  },
  {
    // A git directory planted without any .git entry (HEAD, objects/, refs/): git uses it when run inside.
    id: 'git-bare-plant-no-dotgit',
    command: [
      'git init -q --bare sub',
      'git -C sub config core.bare false',
      'git -C sub config core.worktree ..',
      'git -C sub config core.fsmonitor {T}',
      'echo PLANTED',
    ].join('; '),
    next: [['git', '-C', 'sub', 'status']],
    quarantined: ['sub/config'],
    stdout: /PLANTED/,
  },
  {
    // Every name the sweep would rename a planted file to is taken first.
    id: 'git-quarantine-names-taken',
    command: [
      'git init -q sub3',
      'for n in "" $(seq -f "-%g" 1 99); do touch "sub3/.git/config.aleph-quarantined$n"; mkdir -p "sub3/.git/hooks.aleph-quarantined$n"; done',
      'git -C sub3 config core.fsmonitor {T}',
      `${HOOK} > sub3/.git/hooks/pre-commit; chmod +x sub3/.git/hooks/pre-commit`,
    ].join('; '),
    next: [
      ['git', '-C', 'sub3', 'status'],
      ['git', '-C', 'sub3', ...GIT_COMMIT.slice(1)],
    ],
    quarantined: ['sub3/.git/config', 'sub3/.git/hooks'],
  },
  {
    id: 'git-dotgit-file',
    command: [
      'git init -q --bare planted.git',
      'git -C planted.git config core.bare false',
      'git -C planted.git config core.fsmonitor {T}',
      'mkdir -p d && echo "gitdir: $PWD/planted.git" > d/.git',
      'echo PLANTED',
    ].join('; '),
    next: [['git', '-C', 'd', 'status'], GIT_STATUS],
    quarantined: ['d/.git'],
    stdout: /PLANTED/,
  },
];

/** The sanity row: ordinary git inside the sandbox still works in the same repository. */
const GIT_SANITY =
  'echo more >> README.md && git add -A && git commit -qm sandboxed && git log --oneline | wc -l';

function makeRepo(ctx: Ctx, empty: boolean): string {
  const ws = path.join(ctx.dir, 'ws');
  mkdirSync(ws, { mode: 0o755 });
  writeFileSync(path.join(ws, 'README.md'), '# demo\n');
  chownR(ctx, ws);
  if (!empty) {
    hostOk(ctx, ['git', 'init', '-q', '-b', 'main', '.'], ws);
    hostOk(ctx, ['git', 'add', '-A'], ws);
    hostOk(ctx, ['git', 'commit', '-qm', 'initial'], ws);
  }
  return ws;
}

const dotGitEntries = (ws: string) =>
  existsSync(path.join(ws, '.git')) ? readdirSync(path.join(ws, '.git')) : [];

// ---------------------------------------------------------------------------------------------------
// home

interface HomeCase {
  id: string;
  /** The file the command tries to write, relative to HOME. */
  file: string;
  content: string;
  /** The host user already has it (then it must stay unchanged, else stay absent). */
  existing?: string;
  /** What the host runs next, in `dir`, with `pathVar` as PATH when set. */
  next?: (ctx: Ctx) => { argv: string[]; pathVar?: string }[];
}

const HOME_CASES: HomeCase[] = [
  {
    id: 'bashrc',
    file: '.bashrc',
    content: '{T}\n',
    existing: HOST_BASHRC,
    next: () => [{ argv: ['bash', '-ic', 'true'] }],
  },
  {
    id: 'bash-profile',
    file: '.bash_profile',
    content: '{T}\n',
    next: () => [{ argv: ['bash', '-lc', 'true'] }],
  },
  {
    id: 'profile',
    file: '.profile',
    content: '{T}\n',
    next: () => [{ argv: ['sh', '-lc', 'true'] }, { argv: ['bash', '-lc', 'true'] }],
  },
  { id: 'zshrc', file: '.zshrc', content: '{T}\n' },
  { id: 'zshenv', file: '.zshenv', content: '{T}\n' },
  { id: 'fish-config', file: '.config/fish/config.fish', content: '{T}\n' },
  {
    id: 'gitconfig',
    file: '.gitconfig',
    content: '[core]\n\tfsmonitor = {T}\n[alias]\n\tl = !{T}\n',
    existing: HOST_GITCONFIG,
    next: (ctx) => [
      { argv: ['git', '-C', path.join(ctx.dir, 'repo'), 'status'] },
      { argv: ['git', '-C', path.join(ctx.dir, 'repo'), 'l'] },
    ],
  },
  {
    id: 'xdg-git-config',
    file: '.config/git/config',
    content: '[core]\n\tfsmonitor = {T}\n[alias]\n\tl = !{T}\n',
    next: (ctx) => [
      { argv: ['git', '-C', path.join(ctx.dir, 'repo'), 'status'] },
      { argv: ['git', '-C', path.join(ctx.dir, 'repo'), 'l'] },
    ],
  },
  {
    id: 'ssh-config',
    file: '.ssh/config',
    content: 'Host *\n  ProxyCommand {T}\n',
    // ssh reads ~/.ssh of the passwd entry, not $HOME: name the scratch one.
    next: (ctx) => [
      {
        argv: [
          'ssh',
          '-F',
          path.join(ctx.home, '.ssh/config'),
          '-o',
          'BatchMode=yes',
          '-o',
          'ConnectTimeout=3',
          '-o',
          `UserKnownHostsFile=${path.join(ctx.dir, 'known_hosts')}`,
          'aleph-host-next.invalid',
          'true',
        ],
      },
    ],
  },
  {
    id: 'ssh-authorized-keys',
    file: '.ssh/authorized_keys',
    content: 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIPlanted planted\n',
  },
  { id: 'npmrc', file: '.npmrc', content: 'script-shell={T}\n//registry.npmjs.org/:_authToken=planted\n' },
  {
    id: 'local-bin-shim',
    file: '.local/bin/git',
    content: '#!/bin/sh\nexec {T}\n',
    next: (ctx) => [
      { argv: ['sh', '-c', 'git --version'], pathVar: `${path.join(ctx.home, '.local/bin')}:${CLEAN_PATH}` },
    ],
  },
  {
    id: 'autostart',
    file: '.config/autostart/x.desktop',
    content: '[Desktop Entry]\nType=Application\nExec={T}\n',
  },
];

/** Top-level protected home paths the host user has (the rest must not exist afterwards: no stubs). */
const homeProtected = (home: string) =>
  DEFAULT_HOME_PROTECTED_PATHS.filter((p) => p !== '.aleph').map(
    (p) => [p, existsSync(path.join(home, p))] as const,
  );

// ---------------------------------------------------------------------------------------------------

describe.skipIf(!stack.ok && !stack.missing.some((m) => REQUIRED.has(m)))(
  `what the host runs next stays the user's, through the CLI${stack.ok ? '' : ` [skipped: ${stack.reason}]`}`,
  () => {
    if (!stack.ok) {
      it('the Linux stack is required here (ALEPH_REQUIRE) but missing', () => {
        throw new Error(`required by ALEPH_REQUIRE but unavailable: ${stack.reason}`);
      });
    }

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
                for (const q of quarantined) {
                  expect(q.startsWith(`${ws}/`), `${q} lies in the workspace`).toBe(true);
                  expect(existsSync(q), `${q} was renamed away`).toBe(false);
                  expect(
                    readdirSync(path.dirname(q)).some((n) =>
                      n.startsWith(`${path.basename(q)}.aleph-quarantined`),
                    ),
                    `${q} was renamed to NAME.aleph-quarantined`,
                  ).toBe(true);
                }
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
                    if (c.existing !== undefined) {
                      mkdirSync(path.dirname(file), { recursive: true });
                      writeFileSync(file, c.existing);
                    }
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
                      'mkdir -p "$(dirname "$f")" 2>/dev/null',
                      `printf '%s' '${content}' >> "$f" && echo "WROTE $f" || echo "REFUSED $f"`,
                      `printf '%s' '${content}' > "$f.new" 2>/dev/null && mv -f "$f.new" "$f" 2>/dev/null && echo "REPLACED $f"`,
                      '[ -e "$f" ] && rm -rf "$f" 2>/dev/null && [ ! -e "$f" ] && echo "REMOVED $f"',
                      'true',
                    ].join('\n');
                    const r = await run(ctx, ws, id, command, extra);
                    expect(r.status, shown(r)).toBe(0);
                    expect(r.json?.stdout, shown(r)).toBe(`REFUSED ${file}\n`);
                    if (before === undefined)
                      expect(existsSync(file), `~/${c.file} was created (or left as a stub)`).toBe(false);
                    else expect(sha(file), `~/${c.file} changed`).toBe(before);
                    expect(
                      homeProtected(ctx.home),
                      'protected home paths that appeared (stubs left behind)',
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
                // And nothing beyond the strict baseline is granted without approval: the planted
                // spawn_subprocess = true would let this run; it is refused as an elevation.
                const strict = await runCli(ctx, [
                  'run',
                  '--json',
                  '--workspace',
                  ws,
                  '--session',
                  `${id}-strict`,
                  '--approve',
                  'none',
                  '--allow-spawn',
                  '--',
                  'true',
                ]);
                expect(strict.status, shown(strict)).toBe(126);
                expect(strict.stdout, shown(strict)).toMatch(/ALEPH_CAPABILITY_DENIED/);
              },
              60_000,
            );
          });

          describe("the audit log and other sessions' homes", () => {
            const id = 'audit-log';
            (broken(id) ? it.fails : it)(
              `a command granted read of the audit log's directory and of HOME cannot read the log, the vault or ~/.aleph/homes${broken(id) ? ' [known broken]' : ''}`,
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
                const r = await run(
                  ctx,
                  ws,
                  id,
                  [
                    `cat '${path.join(shared, 'readable.txt')}'`,
                    `cat '${log}' 2>/dev/null && echo READ-LOG`,
                    `grep -r '${SECRET}' '${shared}' '${ctx.home}' 2>/dev/null && echo FOUND-SECRET`,
                    `ls -A '${aleph}/homes' 2>/dev/null | grep . && echo LISTED-HOMES`,
                    `for v in data .shared_token; do cat "${aleph}/$v" 2>/dev/null && echo READ-$v; done`,
                    'echo done',
                  ].join('\n'),
                  ['--allow-read', shared, '--allow-read', ctx.home],
                );
                expect(r.json?.stdout, shown(r)).toBe('readable\ndone\n');
              },
              60_000,
            );
          });
        },
      );
    }
  },
);
