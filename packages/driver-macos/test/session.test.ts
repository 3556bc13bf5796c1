import {
  chmodSync,
  closeSync,
  constants,
  fstatSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  realpathSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ApprovalGate, isAlephError, WorkspaceSandbox } from '@aleph/sandbox-core';
import { afterEach, describe, expect, it } from 'vitest';
import { readAllSync, replaceContentSync } from '../src/files-binding.js';
import { createMacosDriver, type MacosFs } from '../src/index.js';

// The session API on the macOS driver, off macOS: spawn through a stand-in sandbox-exec (it drops the
// profile and execs the program), and the file mechanism against a fake of its binding whose opens
// refuse any symbolic link in the path, as O_NOFOLLOW_ANY does.
const posix = process.platform !== 'win32';
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
const tmp = () => {
  const d = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'aleph-macos-session-')));
  dirs.push(d);
  return d;
};

/** A MacosFs on this host: every open first refuses a path with a link in it (O_NOFOLLOW_ANY). */
function fakeMacosFs(beforeOpen: (p: string) => void = () => {}): MacosFs {
  const linux = {
    read: constants.O_RDONLY | constants.O_NONBLOCK,
    directory: constants.O_RDONLY | constants.O_DIRECTORY,
    write: constants.O_WRONLY | constants.O_CREAT,
  };
  return {
    open(p, intent) {
      beforeOpen(p);
      let at = '/';
      for (const part of p.split('/').filter(Boolean)) {
        at = path.join(at, part);
        let isLink = false;
        try {
          isLink = lstatSync(at).isSymbolicLink();
        } catch {
          break;
        }
        if (isLink) throw Object.assign(new Error(`ELOOP: ${at} is a link`), { code: 'ELOOP' });
      }
      return openSync(p, linux[intent], 0o600);
    },
    fstat: (fd) => fstatSync(fd),
    lstat: (p) => {
      try {
        return lstatSync(p);
      } catch {
        return undefined;
      }
    },
    readlink: (p) => readlinkSync(p),
    readdir: (p) => readdirSync(p, { withFileTypes: true }),
    readAll: readAllSync,
    replaceContent: replaceContentSync,
    close: (fd) => closeSync(fd),
  };
}

function setup(binding: MacosFs = fakeMacosFs()) {
  const base = tmp();
  const fakeExec = path.join(base, 'sandbox-exec');
  writeFileSync(fakeExec, '#!/bin/sh\nwhile [ "$1" != "--" ]; do shift; done\nshift\nexec "$@"\n');
  chmodSync(fakeExec, 0o755);
  const secret = path.join(base, 'secret.txt');
  writeFileSync(secret, 'host-secret\n');
  const sandbox = new WorkspaceSandbox({
    driver: createMacosDriver({
      platform: 'darwin',
      sandboxExecPath: fakeExec,
      collectViolations: false,
      filesBinding: binding,
      vaultPaths: [path.join(base, 'vault')],
    }),
    workspaceRoot: path.join(base, 'ws'),
    approvalGate: new ApprovalGate({ requester: { requestApproval: async () => ({ outcome: 'approved' }) } }),
  });
  return { base, secret, sandbox, session: sandbox.session('mac') };
}

const code = (p: Promise<unknown>) =>
  p.then(
    () => 'ok',
    (e: unknown) => (isAlephError(e) ? e.code : String(e)),
  );

describe.runIf(posix)('macOS driver: spawn (stand-in sandbox-exec)', () => {
  it("streams stdout, takes streamed stdin ('pipe'), and kill() says killedBy 'kill'", async () => {
    const { sandbox, session } = setup();
    const proc = await session.spawn({
      program: '/bin/sh',
      args: ['-c', 'read x; echo "got $x"'],
      stdin: 'pipe',
      capabilities: { spawnSubprocess: true },
    });
    const writer = proc.stdin.getWriter();
    await writer.write(new TextEncoder().encode('hello\n'));
    await writer.close();
    expect((await proc.wait()).stdoutText).toBe('got hello\n');
    const sleeper = await session.spawn({ program: '/bin/sleep', args: ['100'] });
    await sleeper.kill();
    expect((await sleeper.wait()).details).toMatchObject({ killedBy: 'kill' });
    await sandbox.dispose();
  });
});

describe.runIf(posix)('macOS driver: files (fake binding with O_NOFOLLOW_ANY semantics)', () => {
  it('reads, writes in place (no set-id bits), lists and stats inside the workspace', async () => {
    const { session } = setup();
    const ws = await session.workspace();
    await session.files.writeFile('a.txt', 'one', { mode: 0o4755 });
    expect(statSync(path.join(ws, 'a.txt')).mode & 0o7777).toBe(0o755);
    await session.files.writeFile('a.txt', 'two');
    expect(await session.files.readTextFile('a.txt')).toBe('two');
    expect(await session.files.list('.')).toEqual([{ name: 'a.txt', type: 'file' }]);
    expect(await session.files.stat('a.txt')).toMatchObject({ type: 'file', size: 3 });
  });

  it('a planted link to a host secret is refused; the host itself reads it (control)', async () => {
    const { session, secret } = setup();
    const ws = await session.workspace();
    symlinkSync(secret, path.join(ws, 'innocent'));
    expect(readFileSync(path.join(ws, 'innocent'), 'utf8')).toBe('host-secret\n');
    expect(await code(session.files.readFile('innocent'))).toBe('ALEPH_PATH_OUTSIDE_WORKSPACE');
    expect(await code(session.files.writeFile('innocent', 'x'))).toBe('ALEPH_INVALID_PATH');
  });

  it('a directory swapped for a link after the walk is caught by the O_NOFOLLOW_ANY open', async () => {
    const base = tmp();
    const outside = path.join(base, 'outside');
    mkdirSync(outside);
    writeFileSync(path.join(outside, 'f.txt'), 'host-secret\n');
    let swapped = false;
    const { session } = setup(
      fakeMacosFs((p) => {
        if (!swapped && p.endsWith(`${path.sep}d${path.sep}f.txt`)) {
          swapped = true;
          const dir = path.dirname(p);
          renameSync(dir, `${dir}.orig`);
          symlinkSync(outside, dir);
        }
      }),
    );
    const ws = await session.workspace();
    mkdirSync(path.join(ws, 'd'));
    writeFileSync(path.join(ws, 'd', 'f.txt'), 'inside\n');
    expect(await code(session.files.readFile('d/f.txt'))).toBe('ALEPH_INVALID_PATH');
    expect(swapped).toBe(true);
  });

  it('refused as not safe on macOS: deleting, creating missing parents; protected paths as everywhere', async () => {
    const { session } = setup();
    await session.files.writeFile('x', 'x');
    for (const call of [session.files.delete('x'), session.files.writeFile('new/dir/f', 'y')]) {
      const error = await call.then(
        () => undefined,
        (e: unknown) => e as Error,
      );
      expect(isAlephError(error, 'ALEPH_CAPABILITY_UNSUPPORTED')).toBe(true);
      expect(error?.message).toMatch(/not done on macOS, where Node can only act by full path/);
    }
    expect(await code(session.files.writeFile('.envrc', 'export X=1'))).toBe('ALEPH_PATH_PROTECTED');
  });

  it('off macOS without an injected binding, file calls are ALEPH_DRIVER_UNAVAILABLE', async () => {
    const sandbox = new WorkspaceSandbox({
      driver: createMacosDriver(),
      workspaceRoot: path.join(tmp(), 'w'),
    });
    const expected = process.platform === 'darwin' ? 'ALEPH_FILE_NOT_FOUND' : 'ALEPH_DRIVER_UNAVAILABLE';
    expect(await code(sandbox.files('s').readFile('nope'))).toBe(expected);
  });
});
