// deepagents' file tools on the session's files: the shapes deepagents' sandbox backends return
// (LangChain's sandbox standard tests describe them), no command run for a workspace path (so the session
// rate limit never reaches them), and every failure an `error`.
import { chmodSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createFakeDriver, type FakeDriverOptions } from '@aleph/sandbox-core/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { globMatcher } from '../src/glob-match.js';
import { AlephSandbox, type AlephSandboxOptions } from '../src/index.js';

const posix = process.platform !== 'win32';
const POSIX_ONLY = posix ? '' : " [skipped on Windows: the fake driver's file mechanism is POSIX-only]";

const dirs: string[] = [];
const sandboxes: AlephSandbox[] = [];
afterAll(async () => {
  await Promise.all(sandboxes.map((s) => s.close()));
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

async function open(options: AlephSandboxOptions = {}, driverOptions: FakeDriverOptions = {}) {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'aleph-deepagents-files-'));
  dirs.push(dir);
  const driver = createFakeDriver(driverOptions);
  const sandbox = await AlephSandbox.create({
    config: { sandbox: { workspace_root: path.join(dir, 'workspaces') } },
    driver,
    ...options,
  });
  sandboxes.push(sandbox);
  return { sandbox, driver, ws: sandbox.workspace };
}

describe('globMatcher', () => {
  it('matches * ? ** [..] [!..] {a,b} on whole relative paths; the rest is literal', () => {
    const m = (p: string, s: string) => globMatcher(p)(s);
    expect(m('*.txt', 'a.txt')).toBe(true);
    expect(m('*.txt', 'd/a.txt')).toBe(false);
    expect(m('**/*.txt', 'a.txt')).toBe(true);
    expect(m('**/*.txt', 'd/e/a.txt')).toBe(true);
    expect(m('file?.txt', 'file10.txt')).toBe(false);
    expect(m('file[1-2].txt', 'file2.txt')).toBe(true);
    expect(m('file[1-2].txt', 'file3.txt')).toBe(false);
    expect(m('file[!1].txt', 'file2.txt')).toBe(true);
    expect(m('*.{ts,js}', 'a.js')).toBe(true);
    expect(m('*.{ts,js}', 'a.py')).toBe(false);
    expect(m('a+(b).txt', 'a+(b).txt')).toBe(true);
    expect(m('$100.txt', '$100.txt')).toBe(true);
    expect(m('.*', '.hidden')).toBe(true);
    expect(m('.*', 'visible')).toBe(false);
  });
});

describe.runIf(posix)(`file tools on the session's files${POSIX_ONLY}`, () => {
  it('ls: absolute or relative as given, directories with a trailing slash, none for a missing directory', async () => {
    const { sandbox, driver, ws } = await open();
    mkdirSync(path.join(ws, 'd/sub'), { recursive: true });
    writeFileSync(path.join(ws, 'd/a.txt'), 'hello');
    writeFileSync(path.join(ws, 'd/.hidden'), '');
    writeFileSync(path.join(ws, 'd/测试.txt'), 'x');
    symlinkSync('a.txt', path.join(ws, 'd/link'));
    const abs = await sandbox.ls(path.join(ws, 'd'));
    expect(abs.error).toBeUndefined();
    const byPath = Object.fromEntries((abs.files ?? []).map((f) => [f.path, f]));
    expect(Object.keys(byPath).sort()).toEqual(
      ['.hidden', 'a.txt', 'link', 'sub/', '测试.txt'].map((n) => `${ws}/d/${n}`).sort(),
    );
    expect(byPath[`${ws}/d/a.txt`]).toMatchObject({ is_dir: false, size: 5 });
    expect(byPath[`${ws}/d/sub/`]?.is_dir).toBe(true);
    const rel = await sandbox.ls('d/');
    expect((rel.files ?? []).map((f) => f.path)).toContain('d/a.txt');
    expect(await sandbox.ls(path.join(ws, 'missing'))).toEqual({ files: [] });
    expect(driver.runCount).toBe(0);
  });

  it('read: a window of lines with where it is; not found and directories are errors', async () => {
    const { sandbox, driver, ws } = await open();
    writeFileSync(path.join(ws, 'f.txt'), Array.from({ length: 20 }, (_, i) => `Row_${i + 1}`).join('\n'));
    writeFileSync(path.join(ws, 'empty.txt'), '');
    const window = await sandbox.read('f.txt', 10, 5);
    expect(window).toMatchObject({ totalLines: 20, startLine: 11, endLine: 15, nextOffset: 15 });
    expect(window.content).toBe('Row_11\nRow_12\nRow_13\nRow_14\nRow_15');
    expect((await sandbox.read(path.join(ws, 'f.txt'), 18)).nextOffset).toBeUndefined();
    expect((await sandbox.read('f.txt', 0, 0)).content).toBe('');
    expect((await sandbox.read('f.txt', 100)).error).toMatch(/exceeds file length \(20 lines\)/);
    expect((await sandbox.read('empty.txt')).content).toBe(
      'System reminder: File exists but has empty contents',
    );
    expect((await sandbox.read('nope.txt')).error).toMatch(/not found/);
    mkdirSync(path.join(ws, 'adir'));
    expect((await sandbox.read('adir')).error).toMatch(/is a directory/);
    writeFileSync(path.join(ws, 'p.png'), Buffer.from([0x89, 0x50, 0, 1]));
    const image = await sandbox.read('p.png');
    expect(image.mimeType).toBe('image/png');
    expect(Array.from(image.content as Uint8Array)).toEqual([0x89, 0x50, 0, 1]);
    expect(driver.runCount).toBe(0);
  });

  it('grep: literal, with line numbers, names filtered by a glob, binary and media files skipped', async () => {
    const { sandbox, driver, ws } = await open();
    mkdirSync(path.join(ws, 'g/n'), { recursive: true });
    writeFileSync(path.join(ws, 'g/a.txt'), 'apple\nbanana\napple pie\n$100 [a-z]*\n');
    writeFileSync(path.join(ws, 'g/n/b.py'), 'x = "apple"\n');
    writeFileSync(path.join(ws, 'g/bin.txt'), Buffer.from('apple\0apple'));
    writeFileSync(path.join(ws, 'g/img.png'), 'apple');
    const all = await sandbox.grep('apple', path.join(ws, 'g'));
    expect(all.error).toBeUndefined();
    expect(all.matches).toEqual([
      { path: `${ws}/g/a.txt`, line: 1, text: 'apple' },
      { path: `${ws}/g/a.txt`, line: 3, text: 'apple pie' },
      { path: `${ws}/g/n/b.py`, line: 1, text: 'x = "apple"' },
    ]);
    expect((await sandbox.grep('apple', 'g', '*.py')).matches).toEqual([
      { path: 'g/n/b.py', line: 1, text: 'x = "apple"' },
    ]);
    expect((await sandbox.grep('[a-z]*', 'g')).matches?.map((m) => m.line)).toEqual([4]);
    expect((await sandbox.grep('$100', 'g/a.txt')).matches?.length).toBe(1);
    expect(await sandbox.grep('apple', 'missing')).toEqual({ matches: [] });
    const capped = await sandbox.grep('apple', 'g', null, 1);
    expect(capped.matches?.length).toBe(1);
    expect(capped.truncated).toBe(true);
    expect(driver.runCount).toBe(0);
  });

  it('glob: paths relative to the directory searched, directories included, links not descended', async () => {
    const { sandbox, driver, ws } = await open();
    mkdirSync(path.join(ws, 'h/d1/deep'), { recursive: true });
    mkdirSync(path.join(ws, 'h/d2'));
    writeFileSync(path.join(ws, 'h/f1.txt'), '1');
    writeFileSync(path.join(ws, 'h/d1/deep/deep.txt'), '1');
    symlinkSync('..', path.join(ws, 'h/d2/loop'));
    const top = await sandbox.glob('*', path.join(ws, 'h'));
    expect(top.error).toBeUndefined();
    expect(top.files?.map((f) => [f.path, f.is_dir])).toEqual([
      ['d1', true],
      ['d2', true],
      ['f1.txt', false],
    ]);
    const deep = await sandbox.glob('**/*.txt', 'h');
    expect(deep.files?.map((f) => f.path).sort()).toEqual(['d1/deep/deep.txt', 'f1.txt']);
    expect(deep.truncated).toBe(false);
    expect((await sandbox.glob('*.py', 'h')).files).toEqual([]);
    expect(driver.runCount).toBe(0);
  });

  it('edit and delete: deepagents semantics, the mode kept, errors named', async () => {
    const { sandbox, driver, ws } = await open();
    writeFileSync(path.join(ws, 'e.sh'), 'a b a\n');
    chmodSync(path.join(ws, 'e.sh'), 0o750);
    expect((await sandbox.edit('e.sh', 'a', 'z')).error).toMatch(/Multiple occurrences/);
    expect(await sandbox.edit('e.sh', 'a', 'z', true)).toMatchObject({ occurrences: 2 });
    expect((await sandbox.edit('e.sh', 'q', 'z')).error).toMatch(/String not found/);
    expect((await sandbox.edit('nope', 'q', 'z')).error).toBe("Error: File 'nope' not found");
    const { readFileSync, statSync } = await import('node:fs');
    expect(readFileSync(path.join(ws, 'e.sh'), 'utf8')).toBe('z b z\n');
    expect(statSync(path.join(ws, 'e.sh')).mode & 0o777).toBe(0o750);
    mkdirSync(path.join(ws, 'x/y'), { recursive: true });
    expect(await sandbox.delete('x')).toEqual({ path: 'x', filesUpdate: null });
    expect((await sandbox.delete('x')).error).toBe("Error: 'x' not found");
    expect((await sandbox.delete('.git/config')).error).toBeDefined();
    expect((await sandbox.write('.git/hooks/pre-commit', 'x')).error).toMatch(
      /^Failed to write to \.git\/hooks\/pre-commit: .*protected/,
    );
    expect(await sandbox.write('w/new.txt', 'héllo')).toEqual({ path: 'w/new.txt', filesUpdate: null });
    expect(readFileSync(path.join(ws, 'w/new.txt'), 'utf8')).toBe('héllo');
    expect(await sandbox.write('w/p.png', Buffer.from([1, 2, 3]).toString('base64'))).toMatchObject({
      path: 'w/p.png',
    });
    expect([...readFileSync(path.join(ws, 'w/p.png'))]).toEqual([1, 2, 3]);
    expect(driver.runCount).toBe(0);
  });

  it('a link planted to a host secret is an error for every tool, never its content or an empty result', async () => {
    const { sandbox, ws } = await open();
    const secretDir = mkdtempSync(path.join(os.tmpdir(), 'aleph-deepagents-secret-'));
    dirs.push(secretDir);
    writeFileSync(path.join(secretDir, 'key'), 'SECRET');
    symlinkSync(path.join(secretDir, 'key'), path.join(ws, 'innocent.txt'));
    symlinkSync(secretDir, path.join(ws, 'outdir'));
    const read = await sandbox.read('innocent.txt');
    expect(read.error).toMatch(/ALEPH_PATH_OUTSIDE_WORKSPACE|outside/);
    expect(JSON.stringify(read)).not.toContain('SECRET');
    expect((await sandbox.ls('outdir')).error).toMatch(/outside/);
    expect((await sandbox.readRaw('innocent.txt')).error).toBeDefined();
    expect((await sandbox.edit('innocent.txt', 'SECRET', 'x')).error).toBeDefined();
    const grep = await sandbox.grep('SECRET', '.');
    expect(grep.matches).toEqual([]);
    expect(JSON.stringify(await sandbox.glob('**', '.'))).not.toContain('key');
  });

  it("a path outside the workspace runs deepagents' own command, which the model's rate limit skips", async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'aleph-deepagents-rl-'));
    dirs.push(dir);
    const driver = createFakeDriver({ output: { exitCode: 0, stdout: new TextEncoder().encode('') } });
    const sandbox = await AlephSandbox.create({
      config: {
        sandbox: {
          workspace_root: path.join(dir, 'workspaces'),
          rate_limit: { capacity: 1, refill_per_second: 0 },
        },
      } as never,
      driver,
    });
    sandboxes.push(sandbox);
    expect((await sandbox.execute('true')).exitCode).toBe(0);
    // The model's own commands have used the bucket up…
    expect((await sandbox.execute('true')).output).toMatch(/ALEPH_RATE_LIMITED/);
    // …and deepagents' own commands for its file tools still run, each one a command of the driver.
    const before = driver.runCount;
    for (const result of [
      await sandbox.ls('/usr'),
      await sandbox.read('/etc/os-release'),
      await sandbox.grep('x', '/usr'),
      await sandbox.glob('*', '/usr'),
    ]) {
      expect(result.error ?? '').not.toMatch(/RATE_LIMITED/);
    }
    expect(driver.runCount - before).toBe(4);
    expect((await sandbox.ls('.')).error).toBeUndefined();
  });

  it('200 file operations in a burst with the default configuration: none refused, none empty', async () => {
    const { sandbox, driver, ws } = await open();
    mkdirSync(path.join(ws, 'b'));
    for (let i = 0; i < 20; i++) writeFileSync(path.join(ws, `b/f${i}.txt`), `line ${i}\n`);
    const ops: Array<Promise<{ error?: string }>> = [];
    for (let i = 0; i < 40; i++) {
      ops.push(sandbox.ls('b'), sandbox.read(`b/f${i % 20}.txt`), sandbox.grep('line', 'b'));
      ops.push(sandbox.glob('*.txt', path.join(ws, 'b')), sandbox.write(`b/w${i}.txt`, `w${i}`));
    }
    const results = await Promise.all(ops);
    expect(results.length).toBe(200);
    expect(results.filter((r) => r.error !== undefined)).toEqual([]);
    expect((results[0] as { files: unknown[] }).files.length).toBeGreaterThanOrEqual(20);
    expect(driver.runCount).toBe(0);
  });
});

describe.runIf(posix)(`isRunning and initialFiles${POSIX_ONLY}`, () => {
  it('isRunning is true until close', async () => {
    const { sandbox } = await open();
    expect(sandbox.isRunning).toBe(true);
    await sandbox.close();
    expect(sandbox.isRunning).toBe(false);
  });

  it('initialFiles are written before create resolves, relative or absolute, nested', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'aleph-deepagents-init-'));
    dirs.push(dir);
    const ws = path.join(dir, 'ws');
    const { sandbox } = await open({
      workspace: ws,
      initialFiles: { 'a.txt': 'A', [path.join(ws, 'src/x/y.ts')]: 'Y', 'e.txt': '' },
    });
    expect((await sandbox.read('a.txt')).content).toBe('A');
    expect((await sandbox.read('src/x/y.ts')).content).toBe('Y');
    expect((await sandbox.readRaw('e.txt')).data?.content).toBe('');
  });

  it('bad initialFiles are refused naming the entry; an unwritable one leaves none behind', async () => {
    await expect(open({ initialFiles: 'x' as never })).rejects.toThrow(
      /options\.initialFiles is not an object/,
    );
    await expect(open({ initialFiles: { 'a.txt': 3 as never } })).rejects.toThrow(
      /options\.initialFiles\["a\.txt"\] is neither a string nor bytes/,
    );
    const dir = mkdtempSync(path.join(os.tmpdir(), 'aleph-deepagents-init-'));
    dirs.push(dir);
    const ws = path.join(dir, 'ws');
    await expect(
      open({ workspace: ws, initialFiles: { 'first.txt': '1', '/etc/aleph-nope': '2' } }),
    ).rejects.toThrow(/options\.initialFiles\["\/etc\/aleph-nope"\] could not be written/);
    const { existsSync } = await import('node:fs');
    expect(existsSync(path.join(ws, 'first.txt'))).toBe(false);
  });
});
