import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  statSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoRoot, tempDirs } from '../support.js';

// The aleph-sandbox command compiles its chunks with a per-user V8 compile cache. These tests pin what
// the cache may and may not do: speed a start up, never change what the command prints, never trust a
// directory someone else can write to, and be switched off by ALEPH_COMPILE_CACHE=0.
const bundle = path.join(repoRoot, 'packages/sandbox/dist/cli-bundle');
const command = path.join(bundle, 'aleph-sandbox.cjs');
const version = JSON.parse(readFileSync(path.join(repoRoot, 'packages/sandbox/package.json'), 'utf8'))
  .version as string;

function cli(args: string[], env: Record<string, string>, file = command) {
  const r = spawnSync(process.execPath, [file, ...args], {
    encoding: 'utf8',
    env: { ...process.env, ...env },
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

const tempDir = tempDirs();

/** The one cache file of a chunk (its name carries the chunk file's identity; see cli-loader.cjs). */
function cacheOf(dir: string, chunk: string) {
  const names = readdirSync(dir).filter((f) => f.startsWith(`${chunk}.`) && f.endsWith('.v8'));
  expect(names).toHaveLength(1);
  return path.join(dir, names[0] as string);
}

/** A home of its own: the cache lives in ~/.aleph/cache, which the drivers protect from commands. */
function setup() {
  const base = tempDir('aleph-cli-cache-');
  const dir = path.join(base, '.aleph', 'cache', `v8-${process.version}-${process.arch}`);
  return { env: { HOME: base, USERPROFILE: base, ALEPH_COMPILE_CACHE: '1' }, base, dir };
}

const posix = process.platform !== 'win32';

/** A copy of the command whose only chunk prints one word, for tests that change the chunk. */
function fakeCommand() {
  const dir = tempDir('aleph-cli-fake-');
  const command = path.join(dir, 'aleph-sandbox.cjs');
  writeFileSync(command, readFileSync(path.join(bundle, 'aleph-sandbox.cjs')));
  const chunk = path.join(dir, 'cli.cjs');
  const source = (word: string) => `process.stdout.write('${word}\\n');\n`;
  return {
    command,
    /** A new file put in place by rename, as an install does. */
    replace(word: string) {
      writeFileSync(`${chunk}.new`, source(word));
      renameSync(`${chunk}.new`, chunk);
    },
    /** The same file written again; waits for the clock to move so the change is visible in ctime. */
    rewrite(word: string) {
      const before = statSync(chunk, { bigint: true }).ctimeNs;
      for (let i = 0; i < 100; i++) {
        writeFileSync(chunk, source(word));
        if (statSync(chunk, { bigint: true }).ctimeNs !== before) return;
        Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 10);
      }
      throw new Error('the file system did not move ctime in a second');
    },
  };
}

describe('aleph-sandbox compile cache', () => {
  it('is written on the first start, private to the user, and reused unchanged by the next', () => {
    const { env, dir } = setup();
    expect(cli(['--version'], env)).toMatchObject({ code: 0, stdout: `${version}\n` });
    const entry = cacheOf(dir, 'cli.cjs');
    if (posix) {
      // (On Windows the per-user directory's ACL keeps others out; mode bits say nothing there.)
      expect(statSync(dir).mode & 0o777).toBe(0o700);
      expect(statSync(entry).mode & 0o777).toBe(0o600);
    }
    expect(readdirSync(dir).filter((f) => f.endsWith('.tmp'))).toEqual([]);
    const before = readFileSync(entry);
    const mtime = statSync(entry).mtimeMs;
    expect(cli(['--version'], env)).toMatchObject({ code: 0, stdout: `${version}\n` });
    // Accepted by V8, so not rewritten.
    expect(statSync(entry).mtimeMs).toBe(mtime);
    expect(readFileSync(entry).equals(before)).toBe(true);
  });

  it.skipIf(process.platform !== 'linux')(
    `covers the chunks a command loads (profile builds the whole sandbox)${process.platform === 'linux' ? '' : ' [skipped: profiles /bin/true with the Linux driver]'}`,
    () => {
      const { env, dir } = setup();
      const r = cli(['profile', '--json', '--', '/bin/true'], env);
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      const cached = readdirSync(dir);
      expect(cached.some((f) => f.startsWith('cli.cjs.'))).toBe(true);
      expect(cached.some((f) => f.startsWith('build-'))).toBe(true);
      expect(cached.some((f) => f.startsWith('config-'))).toBe(true);
    },
  );

  it('recompiles and replaces a corrupt cache instead of failing', () => {
    const { env, dir } = setup();
    expect(cli(['--version'], env)).toMatchObject({ code: 0, stdout: `${version}\n` });
    const entry = cacheOf(dir, 'cli.cjs');
    const garbage = Buffer.alloc(4096, 0x5a);
    writeFileSync(entry, garbage, { mode: 0o600 });
    expect(cli(['--version'], env)).toMatchObject({ code: 0, stdout: `${version}\n` });
    expect(readFileSync(entry).equals(garbage)).toBe(false);
  });

  it('removes caches written more than 30 days ago when it writes new ones', () => {
    const { env, dir } = setup();
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const old = path.join(dir, 'chunk-of-an-old-version.cjs.v8');
    const leftover = path.join(dir, 'cli.cjs.0-0-0-0-0.v8.4242.tmp');
    const recent = path.join(dir, 'chunk-still-recent.cjs.v8');
    for (const f of [old, leftover, recent]) writeFileSync(f, 'x', { mode: 0o600 });
    const longAgo = new Date(Date.now() - 40 * 24 * 60 * 60 * 1000);
    utimesSync(old, longAgo, longAgo);
    utimesSync(leftover, longAgo, longAgo);
    expect(cli(['--version'], env)).toMatchObject({ code: 0, stdout: `${version}\n` });
    expect(existsSync(old)).toBe(false);
    expect(existsSync(leftover)).toBe(false);
    expect(existsSync(recent)).toBe(true);
    cacheOf(dir, 'cli.cjs');
  });

  it('runs a chunk that changed, even when its length did not (V8 checks only the length)', () => {
    const { env } = setup();
    const chunk = fakeCommand();
    chunk.replace('first');
    expect(cli([], env, chunk.command).stdout).toBe('first\n');
    expect(cli([], env, chunk.command).stdout).toBe('first\n');
    // An upgrade: a new file of the same length under the same name.
    chunk.replace('other');
    expect(cli([], env, chunk.command).stdout).toBe('other\n');
    // An edit in place: same file, same length, new content.
    chunk.rewrite('third');
    expect(cli([], env, chunk.command).stdout).toBe('third\n');
  });

  it.skipIf(!posix)(
    `ignores a cache directory that others can write to${posix ? '' : ' [skipped: Windows protects it by ACL, not mode bits]'}`,
    () => {
      // Another user plants, under this chunk's cache name, the cache of other code of the same length.
      const chunk = fakeCommand();
      chunk.replace('other');
      const other = setup();
      expect(cli([], other.env, chunk.command).stdout).toBe('other\n');
      const plantedCode = readFileSync(cacheOf(other.dir, 'cli.cjs'));
      chunk.replace('first');
      const learn = setup();
      expect(cli([], learn.env, chunk.command).stdout).toBe('first\n');
      const name = path.basename(cacheOf(learn.dir, 'cli.cjs'));
      // In a directory only we can write to, such a cache would be believed: that is the threat.
      writeFileSync(path.join(learn.dir, name), plantedCode);
      expect(cli([], learn.env, chunk.command).stdout).toBe('other\n');
      const { env, dir } = setup();
      mkdirSync(dir, { recursive: true });
      chmodSync(dir, 0o777);
      writeFileSync(path.join(dir, name), plantedCode);
      expect(cli([], env, chunk.command).stdout).toBe('first\n');
      expect(readFileSync(path.join(dir, name)).equals(plantedCode)).toBe(true);
      expect(readdirSync(dir)).toEqual([name]);
    },
  );

  it('is off with ALEPH_COMPILE_CACHE=0', () => {
    const { env, base } = setup();
    expect(cli(['--version'], { ...env, ALEPH_COMPILE_CACHE: '0' })).toMatchObject({
      code: 0,
      stdout: `${version}\n`,
    });
    expect(existsSync(path.join(base, '.aleph', 'cache'))).toBe(false);
  });

  it('leaves usage errors and their exit code as they were', () => {
    const { env } = setup();
    const r = cli(['frobnicate'], env);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/unknown command "frobnicate"/);
  });

  it('keeps the former command name working', () => {
    const { env } = setup();
    expect(cli(['--version'], env, path.join(bundle, 'aleph-sandbox.mjs'))).toMatchObject({
      code: 0,
      stdout: `${version}\n`,
    });
  });
});
