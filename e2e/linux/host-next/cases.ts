import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'vitest';
import { CLEAN_PATH, type Ctx, HOST_BASHRC, HOST_GITCONFIG, hostOk } from './world.js';

// host-next.test.ts: what each row plants, and what the host runs next.

// ---------------------------------------------------------------------------------------------------
// git

/** The `.git` entries git itself may add or rewrite during an ordinary run. */
export const GIT_OWN =
  /^(index|HEAD|ORIG_HEAD|COMMIT_EDITMSG|FETCH_HEAD|AUTO_MERGE|packed-refs|objects|refs|logs|index\.lock)$/;

export interface GitCase {
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

export const HOOK = "printf '#!/bin/sh\\nexec {T}\\n'";
export const GIT_STATUS = ['git', 'status'];
export const GIT_COMMIT = ['git', 'commit', '--allow-empty', '-qm', 'host next'];
/** 60 directories down. */
const DEEP = Array.from({ length: 60 }, () => 'd').join('/');

export const GIT_CASES: GitCase[] = [
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
    // A repository deeper than any bound a walk could have (the old sweep stopped at 40 levels).
    id: 'git-init-depth-60',
    command: [
      `mkdir -p ${DEEP}`,
      `git init -q ${DEEP}/x`,
      `git -C ${DEEP}/x config core.fsmonitor {T}`,
      `${HOOK} > ${DEEP}/x/.git/hooks/pre-commit; chmod +x ${DEEP}/x/.git/hooks/pre-commit`,
    ].join('; '),
    next: [
      ['git', '-C', `${DEEP}/x`, 'status'],
      ['git', '-C', `${DEEP}/x`, ...GIT_COMMIT.slice(1)],
    ],
    quarantined: [`${DEEP}/x/.git/config`, `${DEEP}/x/.git/hooks`],
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
export const GIT_SANITY =
  'echo more >> README.md && git add -A && git commit -qm sandboxed && git log --oneline | wc -l';

// ---------------------------------------------------------------------------------------------------
// home

export interface HomeCase {
  id: string;
  /** The file the command tries to write, relative to HOME. */
  file: string;
  content: string;
  /** The host user already has it (then it must stay unchanged, else stay absent). */
  existing?: string;
  /** Other things the host user has, relative to HOME: file contents, or `null` for a directory. */
  hostHas?: Record<string, string | null>;
  /** It is missing, but a protected directory holding it exists: the write itself is refused. */
  inProtectedDir?: true;
  /** What the host runs next, in `dir`, with `pathVar` as PATH when set. */
  next?: (ctx: Ctx) => { argv: string[]; pathVar?: string }[];
}

/** A kubeconfig whose user runs an exec credential plugin: the trigger. */
const KUBECONFIG_EXEC = [
  'apiVersion: v1',
  'kind: Config',
  'clusters:',
  '- cluster: {server: "https://127.0.0.1:9"}',
  '  name: c',
  'contexts:',
  '- context: {cluster: c, user: u}',
  '  name: x',
  'current-context: x',
  'users:',
  '- name: u',
  '  user:',
  '    exec:',
  '      apiVersion: client.authentication.k8s.io/v1beta1',
  '      command: {T}',
  '      interactiveMode: Never',
  '',
].join('\n');

/** The host python's version (its user site is ~/.local/lib/pythonX.Y/site-packages). */
const PYTHON_VERSION = (() => {
  const r = spawnSync('python3', ['-c', 'import sys; print("%d.%d" % sys.version_info[:2])'], {
    encoding: 'utf8',
  });
  return r.status === 0 ? r.stdout.trim() : '3';
})();

export const HOME_CASES: HomeCase[] = [
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
  // Finding A of attack round 34: files and directories through which host tools run code or load
  // credentials, beyond the shell's own startup files.
  {
    id: 'bash-aliases',
    file: '.bash_aliases',
    content: '{T}\n',
    hostHas: { '.bashrc': '[ -f ~/.bash_aliases ] && . ~/.bash_aliases\n' },
    next: () => [{ argv: ['bash', '-ic', 'true'] }],
  },
  {
    id: 'vimrc',
    file: '.vimrc',
    content: "call system('{T}')\n",
    existing: '" the host user\'s own .vimrc\nset nocompatible\n',
    next: (ctx) => [
      { argv: ['vim', '-i', 'NONE', '-N', '-es', '-u', path.join(ctx.home, '.vimrc'), '-c', 'qa!'] },
    ],
  },
  {
    id: 'kube-config',
    file: '.kube/config',
    content: KUBECONFIG_EXEC,
    next: () => [{ argv: ['kubectl', 'get', 'namespaces', '--request-timeout=3s'] }],
  },
  {
    id: 'docker-config',
    file: '.docker/config.json',
    content: '{"credsStore":"planted","credHelpers":{"ghcr.io":"planted"}}\n',
    existing: '{"auths":{}}\n',
  },
  {
    id: 'cargo-config',
    file: '.cargo/config.toml',
    content: '[build]\nrustc-wrapper = "{T}"\n',
    hostHas: { '.cargo': null },
  },
  { id: 'gradle-init-d', file: '.gradle/init.d/x.gradle', content: '"{T}".execute()\n' },
  { id: 'environment-d', file: '.config/environment.d/x.conf', content: 'LD_PRELOAD=/tmp/planted.so\n' },
  {
    id: 'nvim-init',
    file: '.config/nvim/init.lua',
    content: "os.execute('{T}')\n",
    hostHas: { '.config/nvim': null },
    inProtectedDir: true,
  },
  {
    id: 'python-user-site-pth',
    file: `.local/lib/python${PYTHON_VERSION}/site-packages/aleph-planted.pth`,
    content: "import os; os.system('{T}')\n",
    next: () => [{ argv: ['python3', '-c', 'pass'] }],
  },
  {
    id: 'sqliterc',
    file: '.sqliterc',
    content: '.shell {T}\n',
    // sqlite3 finds ~ through the passwd entry, not $HOME: no trigger here.
  },
  {
    id: 'gdbinit',
    file: '.gdbinit',
    content: 'shell {T}\n',
    next: () => [{ argv: ['gdb', '-batch', '-ex', 'quit'] }],
  },
  { id: 'inputrc', file: '.inputrc', content: '"\\C-x": "planted"\n', existing: 'set bell-style none\n' },
  { id: 'tmux-conf', file: '.tmux.conf', content: 'run-shell {T}\n', existing: 'set -g mouse on\n' },
  {
    id: 'home-bin-shim',
    file: 'bin/git',
    content: '#!/bin/sh\nexec {T}\n',
    next: (ctx) => [
      { argv: ['sh', '-c', 'git --version'], pathVar: `${path.join(ctx.home, 'bin')}:${CLEAN_PATH}` },
    ],
  },
];
