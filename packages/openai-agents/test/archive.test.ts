import { existsSync, lstatSync, readlinkSync, statSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import { SandboxArchiveError } from '@openai/agents/sandbox';
import { afterEach, describe, expect, it } from 'vitest';
import { AlephSandboxClient, type AlephSandboxSession } from '../src/index.js';
import { readTar, writeTar } from '../src/tar.js';
import { createPlainDriver, tempDirs, testOptions } from './plain-driver.js';

const tempDir = tempDirs();
const open: AlephSandboxSession[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((s) => s.close()));
});

async function session() {
  const client = new AlephSandboxClient(testOptions(tempDir(), createPlainDriver()));
  const s = await client.create();
  open.push(s);
  return s;
}

const enc = (s: string) => new TextEncoder().encode(s);

describe('persistWorkspace / hydrateWorkspace', () => {
  it('archives directories and files with their modes, in name order, and restores them elsewhere', async () => {
    const a = await session();
    await a.files.writeFile('src/a.txt', 'alpha\n');
    await a.files.writeFile('run.sh', '#!/bin/sh\n', { mode: 0o755 });
    await a.files.writeFile('.git/hooks/pre-commit', 'x').catch(() => {});
    const bytes = await a.persistWorkspace();
    const members = readTar(bytes).map((m) => [m.path, m.type, m.mode.toString(8)]);
    expect(members).toEqual([
      ['run.sh', 'file', '755'],
      ['src', 'directory', '755'],
      ['src/a.txt', 'file', '644'],
    ]);
    const b = await session();
    await b.hydrateWorkspace(bytes);
    expect(await b.files.readTextFile('src/a.txt')).toBe('alpha\n');
    expect(statSync(path.join(b.workspacePath, 'run.sh')).mode & 0o777).toBe(0o755);
  });

  it('restores a link that stays inside; refuses the whole archive for one leading out, nothing written', async () => {
    const s = await session();
    await s.hydrateWorkspace(
      writeTar([
        { path: 'd/f.txt', type: 'file', mode: 0o644, data: enc('f\n') },
        { path: 'd/in', type: 'symlink', mode: 0o777, linkTarget: 'f.txt' },
      ]),
    );
    expect(readlinkSync(path.join(s.workspacePath, 'd', 'in'))).toBe('f.txt');
    for (const [name, target] of [
      ['up', '../../etc'],
      ['abs', '/etc/passwd'],
    ] as const) {
      const attempt = s.hydrateWorkspace(
        writeTar([
          { path: `ok-${name}.txt`, type: 'file', mode: 0o644, data: enc('ok') },
          { path: `d/${name}`, type: 'symlink', mode: 0o777, linkTarget: target },
        ]),
      );
      await expect(attempt).rejects.toBeInstanceOf(SandboxArchiveError);
      await expect(attempt).rejects.toThrow(/nothing written: the link leads out of the workspace/);
      expect(existsSync(path.join(s.workspacePath, `ok-${name}.txt`))).toBe(false);
      expect(() => lstatSync(path.join(s.workspacePath, 'd', name))).toThrow();
    }
  });

  it('refuses a link through a link (x -> ., then x/y -> ..) and a link into a protected path, nothing written', async () => {
    const s = await session();
    const ok = { path: 'ok.txt', type: 'file', mode: 0o644, data: enc('ok') } as const;
    const cases: [Uint8Array, RegExp][] = [
      // Each link stays inside on its own; made in order, the second lands beside x's target and leads out.
      [
        writeTar([
          ok,
          { path: 'x', type: 'symlink', mode: 0o777, linkTarget: '.' },
          { path: 'x/y', type: 'symlink', mode: 0o777, linkTarget: '..' },
        ]),
        /lies under the link "x"/,
      ],
      // A link naming a protected path gives the sandbox (and the file API) a second name for it.
      [writeTar([ok, { path: 'h', type: 'symlink', mode: 0o777, linkTarget: '.git/hooks' }]), /protected/],
      [writeTar([ok, { path: 'd/h', type: 'symlink', mode: 0o777, linkTarget: '../.envrc' }]), /protected/],
    ];
    for (const [bytes, message] of cases) {
      await expect(s.hydrateWorkspace(bytes), String(message)).rejects.toThrow(message);
      expect(existsSync(path.join(s.workspacePath, 'ok.txt'))).toBe(false);
      expect(() => lstatSync(path.join(s.workspacePath, 'y'))).toThrow();
    }
  });

  it('refuses a link made through a link already in the workspace, nothing written', async () => {
    const s = await session();
    symlinkSync('.', path.join(s.workspacePath, 'x'));
    const attempt = s.hydrateWorkspace(
      writeTar([
        { path: 'ok.txt', type: 'file', mode: 0o644, data: enc('ok') },
        { path: 'x/y', type: 'symlink', mode: 0o777, linkTarget: '..' },
      ]),
    );
    await expect(attempt).rejects.toThrow(
      /nothing written: the link "x\/y" would be made through the link "x"/,
    );
    expect(existsSync(path.join(s.workspacePath, 'ok.txt'))).toBe(false);
    expect(() => lstatSync(path.join(s.workspacePath, 'y'))).toThrow();
  });

  it('refuses names climbing out, protected paths and limits passed, nothing written', async () => {
    const s = await session();
    const ok = { path: 'ok.txt', type: 'file', mode: 0o644, data: enc('ok') } as const;
    const cases: [Uint8Array, RegExp, object?][] = [
      [writeTar([ok, { path: '../x', type: 'file', mode: 0o644 }]), /climbs out/],
      [writeTar([ok, { path: '/abs', type: 'file', mode: 0o644 }]), /absolute/],
      [
        writeTar([ok, { path: 'v/.git/hooks/post-merge', type: 'file', mode: 0o755 }]),
        /protected path "\.git\/hooks"/,
      ],
      [writeTar([ok, ok, ok]), /member count exceeds limit/, { archiveLimits: { maxMembers: 2 } }],
      [writeTar([ok]), /input size exceeds limit/, { archiveLimits: { maxInputBytes: 100 } }],
      [writeTar([ok]).subarray(0, 700), /cut short|ends inside/],
    ];
    for (const [bytes, message, options] of cases) {
      await expect(s.hydrateWorkspace(bytes, options), String(message)).rejects.toThrow(message);
      expect(existsSync(path.join(s.workspacePath, 'ok.txt'))).toBe(false);
    }
  });

  it('persist keeps within the limits', async () => {
    const s = await session();
    await s.files.writeFile('a.txt', 'a'.repeat(100));
    await s.files.writeFile('b.txt', 'b');
    s.setArchiveLimits({ maxExtractedBytes: 50 });
    await expect(s.persistWorkspace()).rejects.toThrow(/extracted size exceeds limit/);
    s.setArchiveLimits({ maxMembers: 1 });
    await expect(s.persistWorkspace()).rejects.toThrow(/member count exceeds limit/);
    s.setArchiveLimits(null);
    expect(readTar(await s.persistWorkspace()).length).toBe(2);
  });
});
