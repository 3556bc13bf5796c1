// What deepagents' documented backend protocol (BackendProtocolV2 / SandboxBackendProtocolV2 in its
// types, and what LangChain's sandbox standard tests ask of a provider) expects, observed on AlephSandbox
// in the real sandbox: each scenario returns what the backend answered, the test compares it with the
// protocol. Paths are written both ways an agent writes them: absolute, and relative to the workspace.
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { AlephSandbox } from '@aleph/deepagents';
import { ToolMessage } from '@langchain/core/messages';
import { createDeepAgent } from 'deepagents';
import { contentText, scripted } from './deepagents-fake-model.mjs';

const config = (plan) => ({
  sandbox: { workspace_root: path.join(plan.base, 'workspaces'), default_timeout_seconds: 60 },
});

async function withSandbox(plan, name, fn, options = {}) {
  const sandbox = await AlephSandbox.create({
    config: config(plan),
    workspace: path.join(plan.base, name),
    ...options,
  });
  try {
    return await fn(sandbox);
  } finally {
    await sandbox.close();
  }
}

const pathsOf = (r) => (r.files ?? []).map((f) => f.path).sort();
const cat = async (sandbox, p) => (await sandbox.execute(`cat '${p}'`)).output;

/** write/read/edit as the standard tests do them, at `at(name)` (absolute or relative). */
async function fileOps(sandbox, at) {
  const o = {};
  o.write = await sandbox.write(at('wt/new.txt'), 'Hello, sandbox!\nLine 2\nLine 3');
  o.writeCat = await cat(sandbox, at('wt/new.txt'));
  o.nested = await sandbox.write(at('wt/deep/nested/dir/file.txt'), 'Nested');
  o.overwrite = await sandbox.write(at('wt/new.txt'), 'Second content');
  o.overwriteCat = await cat(sandbox, at('wt/new.txt'));
  const special = 'Special chars: $VAR, `command`, $(subshell)\nTab\there\nBackslash: \\';
  await sandbox.write(at('wt/special.txt'), special);
  o.special = (await cat(sandbox, at('wt/special.txt'))) === special;
  o.empty = await sandbox.write(at('wt/empty.txt'), '');
  o.emptyRead = await sandbox.read(at('wt/empty.txt'));
  await sandbox.write(at('wt/dir with spaces/file name.txt'), 'spaced');
  o.spaces = await cat(sandbox, at('wt/dir with spaces/file name.txt'));
  const unicode = 'Hello 👋 世界 مرحبا Привет 🌍\nLine with émojis 🎉';
  await sandbox.write(at('wt/unicode.txt'), unicode);
  o.unicodeCat = (await cat(sandbox, at('wt/unicode.txt'))) === unicode;
  o.unicodeRead = await sandbox.read(at('wt/unicode.txt'));
  o.slashes = await sandbox.write(`${at('wt/slashes')}//sub///file.txt`, 'Content');
  o.slashesCat = await cat(sandbox, at('wt/slashes/sub/file.txt'));
  await sandbox.write(at('wt/newlines.txt'), '\n\n\n\n\n');
  o.newlines = (await sandbox.execute(`wc -l < '${at('wt/newlines.txt')}'`)).output.trim();
  const rows = (n) => Array.from({ length: n }, (_, i) => `Row_${i + 1}_content`).join('\n');
  await sandbox.write(at('rd/rows.txt'), rows(1000));
  o.readMissing = await sandbox.read(at('rd/missing-xyz.txt'));
  o.readOffset = await sandbox.read(at('rd/rows.txt'), 5, 3);
  o.readChunk = await sandbox.read(at('rd/rows.txt'), 500, 100);
  o.readZero = await sandbox.read(at('rd/rows.txt'), 0, 0);
  o.readBeyond = await sandbox.read(at('rd/rows.txt'), 5000, 10);
  await sandbox.write(at('rd/long.txt'), `Short line\n${'x'.repeat(3000)}\nAnother`);
  o.readLong = await sandbox.read(at('rd/long.txt'));
  await sandbox.write(at('ed/a.txt'), 'apple\nbanana\napple\norange\napple');
  o.editMulti = await sandbox.edit(at('ed/a.txt'), 'apple', 'pear');
  o.editMultiAfter = await cat(sandbox, at('ed/a.txt'));
  o.editAll = await sandbox.edit(at('ed/a.txt'), 'apple', 'pear', true);
  o.editAllAfter = await cat(sandbox, at('ed/a.txt'));
  o.editNotFound = await sandbox.edit(at('ed/a.txt'), 'nonexistent', 'x');
  o.editMissing = await sandbox.edit(at('ed/missing-xyz.txt'), 'old', 'new');
  await sandbox.write(at('ed/u.txt'), 'Hello 👋 world\n世界 is beautiful');
  o.editUnicode = await sandbox.edit(at('ed/u.txt'), '👋', '🌍');
  o.editUnicodeAfter = await cat(sandbox, at('ed/u.txt'));
  o.editSame = await sandbox.edit(at('ed/u.txt'), '世界', '世界');
  await sandbox.write(at('ed/m.txt'), 'Line 1\nLine 2\nLine 3\n');
  o.editLines = await sandbox.edit(at('ed/m.txt'), 'Line 1\nLine 2', 'Combined');
  o.editLinesAfter = await cat(sandbox, at('ed/m.txt'));
  await sandbox.write(at('ed/re.txt'), 'Price: $100.00\nPattern: [a-z]*');
  await sandbox.edit(at('ed/re.txt'), '$100.00', '$200.00');
  await sandbox.edit(at('ed/re.txt'), '[a-z]*', '[0-9]+');
  o.editRegexAfter = await cat(sandbox, at('ed/re.txt'));
  return o;
}

/** ls/grep/glob as the standard tests do them, beneath `at(name)`. */
async function searchOps(sandbox, at) {
  const o = {};
  await sandbox.write(at('li/file1.txt'), 'content1');
  await sandbox.write(at('li/.hidden'), 'hidden');
  await sandbox.write(at('li/file(1).txt'), 'x');
  await sandbox.write(at('li/файл.txt'), 'x');
  await sandbox.execute(`mkdir -p '${at('li/sub dir')}' '${at('li/empty')}'`);
  o.ls = await sandbox.ls(at('li'));
  o.lsSlash = pathsOf(await sandbox.ls(`${at('li')}/`));
  o.lsEmpty = await sandbox.ls(at('li/empty'));
  o.lsMissing = await sandbox.ls(at('li/does-not-exist-12345'));
  await sandbox.write(at('gr/file1.txt'), 'Hello world\nGoodbye world');
  await sandbox.write(at('gr/sub/file2.py'), 'Hello there\nPrice: $100\nPattern: [a-z]*');
  await sandbox.write(at('gr/u.txt'), 'Hello 世界\nhello\nHELLO');
  await sandbox.write(at('gr/img.png'), Buffer.from('Hello binary').toString('base64'));
  o.grep = await sandbox.grep('Hello', at('gr'));
  o.grepGlob = await sandbox.grep('Hello', at('gr'), '*.py');
  o.grepLiteral = [
    await sandbox.grep('$100', at('gr')),
    await sandbox.grep('[a-z]*', at('gr')),
    await sandbox.grep('世界', at('gr')),
  ];
  o.grepNone = await sandbox.grep('nonexistent_str', at('gr'));
  o.grepMissing = await sandbox.grep('x', at('gr/none-xyz'));
  o.grepMax = await sandbox.grep('Hello', at('gr'), null, 1);
  await sandbox.write(at('gl/file1.txt'), 'c');
  await sandbox.write(at('gl/file2.txt'), 'c');
  await sandbox.write(at('gl/file10.txt'), 'c');
  await sandbox.write(at('gl/fileA.py'), 'c');
  await sandbox.write(at('gl/.hidden1'), 'c');
  await sandbox.write(at('gl/a/b/c/deep.txt'), 'c');
  o.globStar = pathsOf(await sandbox.glob('*.txt', at('gl')));
  o.globDeep = pathsOf(await sandbox.glob('**/deep.txt', at('gl')));
  o.globAll = pathsOf(await sandbox.glob('**/*.txt', at('gl')));
  o.globClass = pathsOf(await sandbox.glob('file[1-2].txt', at('gl')));
  o.globQuestion = pathsOf(await sandbox.glob('file?.txt', at('gl')));
  o.globHidden = pathsOf(await sandbox.glob('.*', at('gl')));
  o.globDirs = (await sandbox.glob('*', at('gl'))).files?.filter((f) => f.is_dir).map((f) => f.path);
  o.globNone = await sandbox.glob('*.rs', at('gl'));
  return o;
}

export const scenarios = {
  // The file operations and searches, with absolute paths then relative ones, each in its own directory.
  async spec(plan) {
    return withSandbox(plan, 'spec', async (sandbox) => {
      const ws = sandbox.workspace;
      const abs = (p) => path.join(ws, 'abs', p);
      const rel = (p) => `rel/${p}`;
      return {
        workspace: ws,
        absolute: { ...(await fileOps(sandbox, abs)), ...(await searchOps(sandbox, abs)) },
        relative: { ...(await fileOps(sandbox, rel)), ...(await searchOps(sandbox, rel)) },
        upload: await sandbox.uploadFiles([
          [abs('up/one.txt'), new TextEncoder().encode('Content 1')],
          ['up/two.txt', new TextEncoder().encode('Content 2')],
        ]),
        download: (await sandbox.downloadFiles([abs('up/one.txt'), 'up/two.txt', 'up/none-12345.txt'])).map(
          (d) => ({ ...d, content: d.content === null ? null : new TextDecoder().decode(d.content) }),
        ),
      };
    });
  },

  // A directory of thousands of entries made by a command: ls lists every one (deepagents' LsResult has no
  // truncation), glob and grep find every one, grep's maxCount cuts with `truncated: true`.
  async large(plan) {
    return withSandbox(plan, 'large', async (sandbox) => {
      const ws = sandbox.workspace;
      const made = await sandbox.execute(
        'mkdir -p big/sub && cd big && seq -f f%05g.txt 0 4999 | xargs sh -c \'for f; do echo needle > "$f"; done\' _ && echo nested > sub/n.txt',
      );
      const t0 = Date.now();
      const ls = await sandbox.ls(path.join(ws, 'big'));
      const lsRel = await sandbox.ls('big');
      const glob = await sandbox.glob('**/*.txt', 'big');
      const grep = await sandbox.grep('needle', path.join(ws, 'big'));
      const grepMax = await sandbox.grep('needle', 'big', '*.txt', 10);
      const ms = Date.now() - t0;
      const summary = (r) => ({
        error: r.error,
        count: (r.files ?? r.matches)?.length,
        first: (r.files ?? r.matches)?.[0]?.path,
        last: (r.files ?? r.matches)?.at(-1)?.path,
        truncated: r.truncated,
      });
      // Another sandbox on the same workspace, while this one's /tmp still holds notes.md.
      const other = await AlephSandbox.create({ config: config(plan), workspace: ws });
      const otherTmp = await other.read('/tmp/scratch/notes.md').finally(() => other.close());
      return {
        workspace: ws,
        otherTmp,
        made: made.exitCode,
        ls: summary(ls),
        lsRel: summary(lsRel),
        glob: summary(glob),
        grep: summary(grep),
        grepMax: summary(grepMax),
        ms,
      };
    });
  },

  // What fails is an error in deepagents' terms, never an empty listing or another file's content: links a
  // command planted out of the workspace (to the host secret's directory and to the secret), a directory the
  // uid cannot read (made on the host; root reads it), a write through a planted link, and every tool once the sandbox closed.
  async errors(plan) {
    const sandbox = await AlephSandbox.create({
      config: config(plan),
      workspace: path.join(plan.base, 'err'),
    });
    const ws = sandbox.workspace;
    const planted = await sandbox.execute(
      [
        `ln -s '${plan.secretDir}' outdir`,
        `ln -s '${plan.secret}' outfile.txt`,
        'mkdir -p tree/open && echo needle > tree/open/y.txt',
      ].join(' && '),
    );
    // Made on the host, not by a command: the check after a run sets aside what it cannot examine.
    for (const dir of ['locked', 'tree/locked']) {
      mkdirSync(path.join(ws, dir, 'inner'), { recursive: true });
      writeFileSync(path.join(ws, dir, 'inner', 'x.txt'), 'needle\n');
      chmodSync(path.join(ws, dir), 0);
    }
    const o = { workspace: ws, planted: planted.exitCode };
    o.lsLink = await sandbox.ls('outdir');
    o.lsLinkAbs = await sandbox.ls(path.join(ws, 'outdir'));
    o.grepLink = await sandbox.grep('host-secret', 'outdir');
    o.globLink = await sandbox.glob('*', 'outdir');
    o.readLink = await sandbox.read('outfile.txt');
    o.editLink = await sandbox.edit('outfile.txt', 'host', 'HOST');
    o.writeLink = await sandbox.write('outfile.txt', 'overwritten');
    o.writeThrough = await sandbox.write('outdir/new.txt', 'planted');
    o.lsLocked = await sandbox.ls('locked');
    o.readLocked = await sandbox.read('locked/inner/x.txt');
    o.grepTree = await sandbox.grep('needle', 'tree');
    o.globTree = await sandbox.glob('**/*.txt', 'tree');
    for (const dir of ['locked', 'tree/locked']) chmodSync(path.join(ws, dir), 0o755);
    await sandbox.close();
    o.running = sandbox.isRunning;
    o.closed = {
      ls: await sandbox.ls('tree').catch((e) => ({ threw: String(e) })),
      read: await sandbox.read('tree/open/y.txt').catch((e) => ({ threw: String(e) })),
      grep: await sandbox.grep('needle', 'tree').catch((e) => ({ threw: String(e) })),
      glob: await sandbox.glob('*', 'tree').catch((e) => ({ threw: String(e) })),
      write: await sandbox.write('late.txt', 'x').catch((e) => ({ threw: String(e) })),
      edit: await sandbox.edit('tree/open/y.txt', 'needle', 'x').catch((e) => ({ threw: String(e) })),
      execute: await sandbox.execute('echo late').catch((e) => ({ threw: String(e) })),
    };
    return o;
  },

  // deepagents' own loop (its tools, its formatting) over the same operations: relative and absolute paths,
  // unicode names and content, a directory of 3,000 entries listed, globbed and searched; write_file and
  // edit_file on the session's /tmp, which its commands then see (another sandbox does not).
  async agent(plan) {
    return withSandbox(plan, 'agent', async (sandbox) => {
      const ws = sandbox.workspace;
      const made = await sandbox.execute(
        'mkdir -p big && cd big && seq -f e%04g.txt 0 2999 | xargs sh -c \'for f; do echo needle > "$f"; done\' _',
      );
      const u = path.join(ws, 'ü', '数据.txt');
      const call = (name, args, id) => ({ name, args, id });
      const model = scripted(
        [call('write_file', { file_path: u, content: 'строка 1\nline 2 🎉\n' }, 'w1')],
        [call('edit_file', { file_path: 'ü/数据.txt', old_string: '🎉', new_string: '🌍' }, 'e1')],
        // Few turns (independent calls at once): the fake model's messages repeat the whole conversation,
        // and a long one would set off deepagents' summarization, which takes a scripted turn.
        [
          call('read_file', { file_path: 'ü/数据.txt' }, 'r1'),
          call('ls', { path: 'ü' }, 'l1'),
          call('grep', { pattern: '🌍', path: 'ü' }, 'g2'),
          call('read_file', { file_path: 'big/missing.txt' }, 'r2'),
          call('write_file', { file_path: '/tmp/scratch/notes.md', content: 'draft ✎\n' }, 't1'),
          call('write_file', { file_path: '/usr/aleph-nope.txt', content: 'x' }, 't5'),
          call('write_file', { file_path: '/tmp/gone/a.txt', content: 'soon gone' }, 't9'),
          call('delete', { file_path: '/usr/bin/env' }, 't8'),
        ],
        [
          call(
            'edit_file',
            { file_path: '/tmp/scratch/notes.md', old_string: 'draft', new_string: 'final' },
            't2',
          ),
        ],
        [
          call('execute', { command: 'cat /tmp/scratch/notes.md' }, 't3'),
          call('read_file', { file_path: '/tmp/scratch/notes.md' }, 't4'),
        ],
        [call('delete', { file_path: '/tmp/gone' }, 't6')],
        [call('execute', { command: 'test -e /tmp/gone; echo $?; cat /tmp/scratch/notes.md' }, 't7')],
        [
          call('ls', { path: path.join(ws, 'big') }, 'l2'),
          call('glob', { pattern: '**/*.txt', path: 'big' }, 'b1'),
          call('grep', { pattern: 'needle', path: ws, glob: 'e29*.txt' }, 'g1'),
        ],
        'done',
      );
      const result = await createDeepAgent({ model, backend: sandbox }).invoke({
        messages: [{ role: 'user', content: 'go' }],
      });
      const tools = Object.fromEntries(
        result.messages
          .filter((m) => ToolMessage.isInstance(m))
          .map((m) => [m.tool_call_id, { text: contentText(m.content), status: m.status }]),
      );
      // Another sandbox on the same workspace, while this one's /tmp still holds notes.md.
      const other = await AlephSandbox.create({ config: config(plan), workspace: ws });
      const otherTmp = await other.read('/tmp/scratch/notes.md').finally(() => other.close());
      return {
        workspace: ws,
        otherTmp,
        made: made.exitCode,
        tools,
        messages: result.messages.length,
        final: contentText(result.messages.at(-1).content),
      };
    });
  },

  // Lifecycle and execute as the standard tests ask: id, isRunning until close, initialFiles (absolute and
  // relative, nested, a script then run, read, downloaded, listed; an empty object), exit codes, stderr;
  // /tmp kept between one sandbox's commands, never seen by another's.
  async lifecycle(plan) {
    const ws = path.join(plan.base, 'life');
    const sandbox = await AlephSandbox.create({
      config: config(plan),
      workspace: ws,
      initialFiles: {
        [path.join(ws, 'src/components/Button/index.tsx')]:
          'export const Button = () => <button>Click</button>;',
        'init-script.sh': '#!/bin/sh\necho "Hello from initialFiles script"',
        'init-ls-dir/file.txt': 'ls test content',
      },
    });
    const empty = await AlephSandbox.create({ config: config(plan), workspace: ws, initialFiles: {} });
    try {
      return {
        id: sandbox.id,
        running: [sandbox.isRunning, empty.isRunning],
        button: await sandbox.execute(`cat ${path.join(ws, 'src/components/Button/index.tsx')}`),
        script: await sandbox.execute('sh init-script.sh'),
        read: await sandbox.read('init-ls-dir/file.txt'),
        download: (await sandbox.downloadFiles([path.join(ws, 'init-ls-dir/file.txt')])).map((d) => ({
          ...d,
          content: d.content && new TextDecoder().decode(d.content),
        })),
        ls: pathsOf(await sandbox.ls(path.join(ws, 'init-ls-dir'))),
        works: await empty.execute('echo "Works!"'),
        exit42: await sandbox.execute('exit 42'),
        stderr: await sandbox.execute('echo "error message" >&2'),
        env: await sandbox.execute('export MY_VAR="test_value" && echo $MY_VAR'),
        missing: await sandbox.execute('nonexistent_command_12345'),
        tmpKept: await sandbox
          .execute('mkdir /tmp/dl && echo fetched > /tmp/dl/a.txt')
          .then(() => sandbox.execute('cat /tmp/dl/a.txt')),
        tmpOther: await empty.execute('test -e /tmp/dl; echo $?'),
        closed: await sandbox.close().then(() => [sandbox.isRunning, empty.isRunning]),
      };
    } finally {
      await sandbox.close();
      await empty.close();
    }
  },
};
