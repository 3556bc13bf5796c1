import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  realpathSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  type AlephError,
  type FileOperationRecord,
  isAlephError,
  strictCapabilities,
  WorkspaceSandbox,
} from '../src/index.js';
import { createFakeDriver, createFakeFiles } from '../src/testing.js';
import { recordLedger, tempDir } from './helpers.js';

async function rejection(p: Promise<unknown>): Promise<AlephError> {
  try {
    await p;
  } catch (e) {
    if (isAlephError(e)) return e;
    throw e;
  }
  throw new Error('expected a rejection');
}

const posix = process.platform !== 'win32';

function setup(options: { fsRead?: string[]; fsWrite?: string[]; hidden?: string[] } = {}) {
  const base = realpathSync(tempDir());
  const outside = path.join(base, 'outside');
  mkdirSync(outside);
  const secret = path.join(outside, 'secret.txt');
  writeFileSync(secret, 'host-secret\n');
  const driver = createFakeDriver({
    files: createFakeFiles(options.hidden === undefined ? {} : { rules: { hiddenPaths: options.hidden } }),
  });
  const sandbox = new WorkspaceSandbox({
    driver,
    workspaceRoot: path.join(base, 'ws'),
    baseline: { ...strictCapabilities(), fsRead: options.fsRead ?? [], fsWrite: options.fsWrite ?? [] },
  });
  const session = sandbox.session('files');
  return { base, outside, secret, sandbox, session, files: session.files };
}

describe.runIf(posix)('session files: basics', () => {
  it('write creates parents and reads back; stat, list (sorted, links not followed), delete', async () => {
    const { files, session } = setup();
    await files.writeFile('src/b.txt', 'bee');
    await files.writeFile('src/a.txt', new TextEncoder().encode('ay'));
    const ws = await session.workspace();
    symlinkSync('a.txt', path.join(ws, 'src', 'link'));
    expect(new TextDecoder().decode(await files.readFile('src/a.txt'))).toBe('ay');
    expect(await files.list('src')).toEqual([
      { name: 'a.txt', type: 'file' },
      { name: 'b.txt', type: 'file' },
      { name: 'link', type: 'symlink' },
    ]);
    expect(await files.stat('src/link')).toMatchObject({ type: 'file', size: 2 });
    expect(await files.stat('src/link', { followSymlinks: false })).toMatchObject({ type: 'symlink' });
    expect(await files.stat('src')).toMatchObject({ type: 'directory' });
    await files.delete('src/link');
    expect(existsSync(path.join(ws, 'src', 'a.txt'))).toBe(true);
    await files.delete('src', { recursive: true });
    expect(readdirSync(ws)).toEqual([]);
  });

  it('absolute paths inside the workspace work; a stream reads the file', async () => {
    const { files, session } = setup();
    const ws = await session.workspace();
    await files.writeFile(path.join(ws, 'abs.txt'), 'absolute');
    let text = '';
    for await (const chunk of (await files.readFileStream('abs.txt')) as unknown as AsyncIterable<Uint8Array>)
      text += Buffer.from(chunk).toString();
    expect(text).toBe('absolute');
  });

  it('readTextFile returns line ranges, each line with its terminator', async () => {
    const { files } = setup();
    await files.writeFile('t.txt', 'a\nb\r\nc\nd');
    expect(await files.readTextFile('t.txt')).toBe('a\nb\r\nc\nd');
    expect(await files.readTextFile('t.txt', { startLine: 2, endLine: 3 })).toBe('b\r\nc\n');
    expect(await files.readTextFile('t.txt', { startLine: 4, endLine: 99 })).toBe('d');
    expect(await files.readTextFile('t.txt', { startLine: 9 })).toBe('');
    const bad = await rejection(files.readTextFile('t.txt', { startLine: 0 }));
    expect(bad.message).toMatch(
      /readTextFile options\.startLine is not a line number \(got 0\); pass an integer >= 1/,
    );
  });

  it('writes never set set-id bits; a replaced file keeps its mode; the default is 0644', async () => {
    const { files, session } = setup();
    const ws = await session.workspace();
    await files.writeFile('plain', 'x');
    expect(statSync(path.join(ws, 'plain')).mode & 0o7777).toBe(0o644);
    await files.writeFile('tool', 'x', { mode: 0o6755 });
    expect(statSync(path.join(ws, 'tool')).mode & 0o7777).toBe(0o755);
    await files.writeFile('tool', 'y');
    expect(statSync(path.join(ws, 'tool')).mode & 0o7777).toBe(0o755);
  });

  it('each call leaves one file_operation record (resolved path, bytes, or the error)', async () => {
    const records = recordLedger();
    const { files, session } = setup();
    const ws = await session.workspace();
    await files.writeFile('a.txt', 'four');
    await rejection(files.readFile('missing'));
    const fileRecords = (records as unknown as FileOperationRecord[]).filter(
      (r) => r.type === 'file_operation',
    );
    expect(fileRecords).toHaveLength(2);
    expect(fileRecords[0]).toMatchObject({
      operation: 'writeFile',
      path: 'a.txt',
      resolved: path.join(ws, 'a.txt'),
      bytes: 4,
      outcome: 'ok',
      sessionId: 'files',
      workspace: ws,
      driver: 'fake',
    });
    expect(fileRecords[1]).toMatchObject({
      operation: 'readFile',
      outcome: 'error',
      error: { code: 'ALEPH_FILE_NOT_FOUND' },
    });
  });
});

describe.runIf(posix)('session files: never leaving the workspace', () => {
  it('a planted symlink to a host secret is refused for read, stat and write; the host can read it (control)', async () => {
    const { files, session, secret } = setup();
    const ws = await session.workspace();
    symlinkSync(secret, path.join(ws, 'innocent.txt'));
    symlinkSync(path.dirname(secret), path.join(ws, 'dir-link'));
    expect(readFileSync(path.join(ws, 'innocent.txt'), 'utf8')).toBe('host-secret\n');
    for (const call of [
      () => files.readFile('innocent.txt'),
      () => files.readTextFile('innocent.txt'),
      () => files.stat('innocent.txt'),
      () => files.readFile('dir-link/secret.txt'),
      () => files.writeFile('dir-link/secret.txt', 'pwned'),
      () => files.list('dir-link'),
    ]) {
      const error = await rejection(call());
      expect(error.code).toBe('ALEPH_PATH_OUTSIDE_WORKSPACE');
      expect(error.message).toMatch(/leads out of .* through the symbolic link .* -> /);
    }
    expect(readFileSync(secret, 'utf8')).toBe('host-secret\n');
  });

  it('.. and absolute paths outside are refused, naming the path and the workspace', async () => {
    const { files, secret } = setup();
    for (const p of ['../outside/secret.txt', secret, '/etc/passwd', 'a/../../x']) {
      const error = await rejection(files.readFile(p));
      expect(error.code).toBe('ALEPH_PATH_OUTSIDE_WORKSPACE');
      expect(error.message).toContain(JSON.stringify(p));
      expect(error.message).toMatch(/is outside the session workspace/);
    }
  });

  it('a link chain that stays inside works; a relative link climbing out through .. is refused', async () => {
    const { files, session } = setup();
    const ws = await session.workspace();
    mkdirSync(path.join(ws, 'real'));
    writeFileSync(path.join(ws, 'real', 'f.txt'), 'inside');
    symlinkSync('real', path.join(ws, 'l1'));
    symlinkSync(path.join(ws, 'l1'), path.join(ws, 'l2'));
    symlinkSync('l2/f.txt', path.join(ws, 'l3'));
    expect(new TextDecoder().decode(await files.readFile('l3'))).toBe('inside');
    symlinkSync('../../outside/secret.txt', path.join(ws, 'real', 'up'));
    expect((await rejection(files.readFile('real/up'))).code).toBe('ALEPH_PATH_OUTSIDE_WORKSPACE');
    symlinkSync('loop', path.join(ws, 'loop'));
    expect((await rejection(files.readFile('loop'))).message).toMatch(/more than 40 symbolic links/);
  });

  it('a write to a final symlink is refused naming its target, not written through', async () => {
    const { files, session } = setup();
    const ws = await session.workspace();
    writeFileSync(path.join(ws, 'target.txt'), 'original');
    symlinkSync('target.txt', path.join(ws, 'alias'));
    const error = await rejection(files.writeFile('alias', 'changed'));
    expect(error.code).toBe('ALEPH_INVALID_PATH');
    expect(error.message).toMatch(/is a symbolic link \(to target\.txt\); writes never go through a link/);
    expect(readFileSync(path.join(ws, 'target.txt'), 'utf8')).toBe('original');
  });

  it('grants: a read grant is readable, not writable; a write grant is writable', async () => {
    const base = realpathSync(tempDir());
    const ro = path.join(base, 'ro');
    const rw = path.join(base, 'rw');
    mkdirSync(ro);
    mkdirSync(rw);
    writeFileSync(path.join(ro, 'data'), 'granted');
    const { files } = setup({ fsRead: [ro], fsWrite: [rw] });
    expect(new TextDecoder().decode(await files.readFile(path.join(ro, 'data')))).toBe('granted');
    const error = await rejection(files.writeFile(path.join(ro, 'data'), 'no'));
    expect(error.code).toBe('ALEPH_PATH_OUTSIDE_WORKSPACE');
    expect(error.message).toMatch(/may read but not write/);
    await files.writeFile(path.join(rw, 'new.txt'), 'ok');
    expect(readFileSync(path.join(rw, 'new.txt'), 'utf8')).toBe('ok');
  });

  it('hidden paths are refused for every operation and left out of listings, even inside a grant', async () => {
    const base = realpathSync(tempDir());
    const vault = path.join(base, 'home', '.aleph', 'data');
    mkdirSync(vault, { recursive: true });
    writeFileSync(path.join(vault, 'token'), 'vault');
    const { files } = setup({ fsWrite: [path.join(base, 'home')], hidden: [vault] });
    for (const call of [
      () => files.readFile(path.join(vault, 'token')),
      () => files.writeFile(path.join(vault, 'x'), 'y'),
      () => files.delete(path.join(base, 'home', '.aleph'), { recursive: true }),
    ]) {
      expect((await rejection(call())).code).toBe('ALEPH_PATH_PROTECTED');
    }
    expect(await files.list(path.join(base, 'home', '.aleph'))).toEqual([]);
  });
});

describe.runIf(posix)('session files: protected paths and bad input', () => {
  it('git control files, .envrc, nested repos and a .git file are refused for writes; reads work', async () => {
    const { files, session } = setup();
    const ws = await session.workspace();
    mkdirSync(path.join(ws, '.git', 'hooks'), { recursive: true });
    writeFileSync(path.join(ws, '.git', 'config'), '[core]\n');
    for (const p of [
      '.git/config',
      '.git/hooks/pre-commit',
      '.envrc',
      'sub/.git/hooks/x',
      'sub/.git',
      '.vscode/settings.json',
    ]) {
      const error = await rejection(files.writeFile(p, 'x'));
      expect(error.code, p).toBe('ALEPH_PATH_PROTECTED');
      expect(error.message).toMatch(/touches the protected path .*; change it yourself outside the sandbox/);
    }
    expect((await rejection(files.delete('.git', { recursive: true }))).code).toBe('ALEPH_PATH_PROTECTED');
    expect((await rejection(files.delete('.git/config'))).code).toBe('ALEPH_PATH_PROTECTED');
    expect(await files.readTextFile('.git/config')).toBe('[core]\n');
    await files.writeFile('.git/HEAD', 'ref: refs/heads/main\n');
    expect(existsSync(path.join(ws, 'sub'))).toBe(false);
  });

  it('NUL bytes, empty paths and non-strings are ALEPH_INVALID_PATH naming the fix', async () => {
    const { files } = setup();
    for (const p of ['a\0b', '', 42 as unknown as string]) {
      const error = await rejection(files.readFile(p));
      expect(error.code).toBe('ALEPH_INVALID_PATH');
      expect(error.message).toMatch(/pass a non-empty path without NUL bytes/);
    }
  });

  it('too large: a read over maxBytes, a write over maxBytes (nothing written, no temp file)', async () => {
    const { files, session } = setup();
    const ws = await session.workspace();
    await files.writeFile('big', new Uint8Array(2048));
    const read = await rejection(files.readFile('big', { maxBytes: 1024 }));
    expect(read.code).toBe('ALEPH_FILE_TOO_LARGE');
    expect(read.message).toMatch(
      /is 2048 bytes, more than maxBytes = 1024; raise maxBytes, or read it with readFileStream/,
    );
    async function* chunks() {
      for (let i = 0; i < 10; i++) yield new Uint8Array(1000);
    }
    expect((await rejection(files.writeFile('big', chunks(), { maxBytes: 5000 }))).code).toBe(
      'ALEPH_FILE_TOO_LARGE',
    );
    expect(statSync(path.join(ws, 'big')).size).toBe(2048);
    expect(readdirSync(ws).filter((n) => n.includes('.aleph-'))).toEqual([]);
  });

  it('directories: read of a directory, list of a file, delete without recursive, delete of the root', async () => {
    const { files } = setup();
    await files.writeFile('d/f', 'x');
    expect((await rejection(files.readFile('d'))).code).toBe('ALEPH_IS_A_DIRECTORY');
    expect((await rejection(files.writeFile('d', 'x'))).code).toBe('ALEPH_IS_A_DIRECTORY');
    expect((await rejection(files.list('d/f'))).code).toBe('ALEPH_NOT_A_DIRECTORY');
    expect((await rejection(files.writeFile('d/f/g', 'x'))).code).toBe('ALEPH_NOT_A_DIRECTORY');
    expect((await rejection(files.delete('d'))).code).toBe('ALEPH_IS_A_DIRECTORY');
    expect((await rejection(files.delete('.'))).message).toMatch(/is the root .* itself/);
    expect((await rejection(files.delete('nope'))).code).toBe('ALEPH_FILE_NOT_FOUND');
  });

  it('an aborted write changes nothing and leaves no temp file', async () => {
    const { files, session } = setup();
    const ws = await session.workspace();
    const controller = new AbortController();
    async function* slow() {
      yield new Uint8Array(10);
      controller.abort();
      yield new Uint8Array(10);
    }
    expect((await rejection(files.writeFile('w', slow(), { signal: controller.signal }))).code).toBe(
      'ALEPH_ABORTED',
    );
    expect(readdirSync(ws)).toEqual([]);
  });

  it('bad write content and mode are ALEPH_INVALID_COMMAND naming the field', async () => {
    const { files } = setup();
    expect((await rejection(files.writeFile('a', 42 as never))).message).toMatch(
      /^writeFile content is not text/,
    );
    expect((await rejection(files.writeFile('a', 'x', { mode: -1 }))).message).toMatch(
      /writeFile options\.mode/,
    );
  });

  it('a driver without a file mechanism refuses every call with ALEPH_CAPABILITY_UNSUPPORTED', async () => {
    const sandbox = new WorkspaceSandbox({
      driver: createFakeDriver({ files: false }),
      workspaceRoot: tempDir(),
    });
    const error = await rejection(sandbox.files('s').readFile('a'));
    expect(error.code).toBe('ALEPH_CAPABILITY_UNSUPPORTED');
    expect(error.message).toMatch(/has no safe file mechanism/);
  });
});
