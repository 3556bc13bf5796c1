import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  statSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoRoot } from '../support.js';

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

function setup() {
  const base = mkdtempSync(path.join(os.tmpdir(), 'aleph-cli-cache-'));
  const dir = path.join(base, 'aleph-sandbox', `v8-${process.version}-${process.arch}`);
  return { env: { XDG_CACHE_HOME: base, ALEPH_COMPILE_CACHE: '1' }, base, dir };
}

const posix = process.platform !== 'win32';

describe('aleph-sandbox compile cache', () => {
  it('is written on the first start, private to the user, and reused unchanged by the next', () => {
    const { env, dir } = setup();
    expect(cli(['--version'], env)).toMatchObject({ code: 0, stdout: `${version}\n` });
    const entry = path.join(dir, 'cli.cjs.v8');
    expect(existsSync(entry)).toBe(true);
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
      const r = cli(['profile', '--json', '--', '/bin/true'], {
        ...env,
        HOME: mkdtempSync(path.join(os.tmpdir(), 'aleph-cli-home-')),
      });
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      const cached = readdirSync(dir);
      expect(cached).toContain('cli.cjs.v8');
      expect(cached.some((f) => f.startsWith('build-'))).toBe(true);
      expect(cached.some((f) => f.startsWith('config-'))).toBe(true);
    },
  );

  it('recompiles and replaces a corrupt cache instead of failing', () => {
    const { env, dir } = setup();
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const entry = path.join(dir, 'cli.cjs.v8');
    const garbage = Buffer.alloc(4096, 0x5a);
    writeFileSync(entry, garbage, { mode: 0o600 });
    expect(cli(['--version'], env)).toMatchObject({ code: 0, stdout: `${version}\n` });
    expect(readFileSync(entry).equals(garbage)).toBe(false);
  });

  it('removes caches written more than 30 days ago when it writes new ones', () => {
    const { env, dir } = setup();
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const old = path.join(dir, 'chunk-of-an-old-version.cjs.v8');
    const leftover = path.join(dir, 'cli.cjs.v8.4242.tmp');
    const recent = path.join(dir, 'chunk-still-recent.cjs.v8');
    for (const f of [old, leftover, recent]) writeFileSync(f, 'x', { mode: 0o600 });
    const longAgo = new Date(Date.now() - 40 * 24 * 60 * 60 * 1000);
    utimesSync(old, longAgo, longAgo);
    utimesSync(leftover, longAgo, longAgo);
    expect(cli(['--version'], env)).toMatchObject({ code: 0, stdout: `${version}\n` });
    expect(existsSync(old)).toBe(false);
    expect(existsSync(leftover)).toBe(false);
    expect(existsSync(recent)).toBe(true);
    expect(existsSync(path.join(dir, 'cli.cjs.v8'))).toBe(true);
  });

  it.skipIf(!posix)(
    `ignores a cache directory that others can write to${posix ? '' : ' [skipped: Windows protects it by ACL, not mode bits]'}`,
    () => {
      const { env, dir } = setup();
      mkdirSync(dir, { recursive: true });
      chmodSync(dir, 0o777);
      const entry = path.join(dir, 'cli.cjs.v8');
      const planted = Buffer.from('planted by another user');
      writeFileSync(entry, planted);
      expect(cli(['--version'], env)).toMatchObject({ code: 0, stdout: `${version}\n` });
      expect(readFileSync(entry).equals(planted)).toBe(true);
      expect(readdirSync(dir)).toEqual(['cli.cjs.v8']);
    },
  );

  it('is off with ALEPH_COMPILE_CACHE=0', () => {
    const { env, base } = setup();
    expect(cli(['--version'], { ...env, ALEPH_COMPILE_CACHE: '0' })).toMatchObject({
      code: 0,
      stdout: `${version}\n`,
    });
    expect(existsSync(path.join(base, 'aleph-sandbox'))).toBe(false);
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
