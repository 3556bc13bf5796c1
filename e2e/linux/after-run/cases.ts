import { expect } from 'vitest';
import { type Ctx, hostOk } from './world.js';

// after-run.test.ts: what each attack plants inside the sandbox, and what the host runs next (issue 23).

/** 60 directories down. */
export const DEEP = Array.from({ length: 60 }, () => 'd').join('/');
export const HOOK = "printf '#!/bin/sh\\nexec {T}\\n'";
const COMMIT = ['commit', '--allow-empty', '-qm', 'host next'];

export interface AttackCase {
  id: string;
  /** Host-side preparation (as the identity), after the first commit. */
  setup?: (ctx: Ctx) => void;
  /** The plant, `sh -c`; `{T}` the trigger. The control runs it on the host itself. */
  command: string;
  /** What the host runs next in the repository, each argv. */
  next: string[][];
  /** Paths (relative) that `details.quarantined` must name. */
  quarantined?: string[];
}

/** The directory that comes last in `bulk/`'s readdir order, as the shell finds it (`ls -U`). */
const LAST = '"bulk/$(ls -U bulk | tail -n 1)"';

/** Rewrites `sub/.git` in place through a shared mapping, and leaves its descriptor in flight in a unix
 * socket loop, so its close (its only event) comes after the run. */
const POINTER_REWRITE = `python3 -c '
import os, mmap, socket, array
fd = os.open("sub/.git", os.O_RDWR); size = os.fstat(fd).st_size
m = mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
m[:] = b"gitdir: {W}/evil/r/.git".ljust(size, b"\\n")[:size]
a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
a.sendmsg([b"x"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [fd, b.fileno()]))])
os.close(fd)'`;

export const ATTACKS: AttackCase[] = [
  {
    id: 'a .git file rewritten in place through a shared mapping, its close left until after the run',
    setup: (ctx) => {
      hostOk(ctx, ['mkdir', '-p', 'sub', 'evil']);
      hostOk(ctx, ['git', 'init', '-q', 'evil/r']);
      hostOk(ctx, ['git', '-C', 'evil/r', 'config', 'core.fsmonitor', ctx.trigger]);
      hostOk(ctx, ['sh', '-c', "printf 'gitdir: ../nothere%0200d\\n' 0 > sub/.git"]);
    },
    command: POINTER_REWRITE,
    next: [['git', '-C', 'sub', 'status']],
    quarantined: ['sub/.git'],
  },
  {
    id: 'a repository 60 levels deep',
    command: `mkdir -p ${DEEP} && git init -q ${DEEP}/x && git -C ${DEEP}/x config core.fsmonitor {T} && ${HOOK} > ${DEEP}/x/.git/hooks/pre-commit && chmod +x ${DEEP}/x/.git/hooks/pre-commit`,
    next: [
      ['git', '-C', `${DEEP}/x`, 'status'],
      ['git', '-C', `${DEEP}/x`, ...COMMIT],
    ],
    quarantined: [`${DEEP}/x/.git/config`, `${DEEP}/x/.git/hooks`],
  },
  {
    id: '60,000 directories, the plant after them in readdir order',
    command: [
      `python3 -c "import os; os.mkdir('bulk'); [os.mkdir('bulk/%d' % i) for i in range(60000)]"`,
      `git init -q ${LAST}/r && git -C ${LAST}/r config core.fsmonitor {T}`,
    ].join(' && '),
    next: [['sh', '-c', `cd ${LAST}/r && git status`]],
  },
  {
    id: 'a git directory split with commondir (HEAD and commondir in w/.git; objects, refs and config in b)',
    command: [
      'mkdir -p w/.git b/objects b/refs/heads',
      'echo "ref: refs/heads/main" > w/.git/HEAD',
      'echo ../../b > w/.git/commondir',
      'printf "[core]\\n\\trepositoryformatversion = 0\\n\\tbare = false\\n\\tfsmonitor = {T}\\n" > b/config',
    ].join(' && '),
    next: [['git', '-C', 'w', 'status']],
    quarantined: ['w/.git/commondir', 'b/config'],
  },
  {
    id: 'an in-place edit of .git/modules/<name>/config of an existing nested repository',
    setup: (ctx) => {
      const src = `${ctx.dir}/subsrc`;
      hostOk(ctx, ['git', 'init', '-q', '-b', 'main', src], ctx.dir);
      hostOk(ctx, ['git', '-C', src, ...COMMIT], ctx.dir);
      hostOk(ctx, ['git', 'init', '-q', '-b', 'main', 'nested']);
      hostOk(ctx, [
        'git',
        '-C',
        'nested',
        '-c',
        'protocol.file.allow=always',
        'submodule',
        '-q',
        'add',
        src,
        'sub',
      ]);
      hostOk(ctx, ['git', '-C', 'nested', 'commit', '-qm', 'submodule']);
      expect(hostOk(ctx, ['ls', 'nested/.git/modules/sub/config']).trim()).toBe(
        'nested/.git/modules/sub/config',
      );
    },
    command: 'printf "[core]\\n\\tfsmonitor = {T}\\n" >> nested/.git/modules/sub/config',
    next: [
      ['git', '-C', 'nested/sub', 'status'],
      ['git', '-C', 'nested', 'status'],
    ],
    quarantined: ['nested/.git/modules/sub/config'],
  },
  {
    id: 'a gitlink and .gitmodules written into the index, pointing at a repository 60 levels deep',
    command: [
      `mkdir -p ${DEEP} && git init -q ${DEEP}/s`,
      `git -C ${DEEP}/s commit --allow-empty -qm s`,
      `git -C ${DEEP}/s config core.fsmonitor {T}`,
      `git update-index --add --cacheinfo 160000,$(git -C ${DEEP}/s rev-parse HEAD),${DEEP}/s`,
      `printf '[submodule "s"]\\n\\tpath = ${DEEP}/s\\n\\turl = ./s\\n' > .gitmodules`,
    ].join(' && '),
    next: [
      ['git', 'status'],
      ['git', 'diff'],
    ],
    quarantined: [`${DEEP}/s/.git/config`],
  },
];
