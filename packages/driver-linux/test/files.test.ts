import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  closeSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describeDriverConformance } from '@aleph/driver-conformance/vitest';
import {
  DEFAULT_HOME_PROTECTED_PATHS,
  DEFAULT_PROTECTED_PATHS,
  isAlephError,
  WorkspaceSandbox,
} from '@aleph/sandbox-core';
import { createFakeDriver } from '@aleph/sandbox-core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { createLinuxFiles, procFdUsable } from '../src/files/linux-files.js';
import { openRoot, procFdOps, procPath } from '../src/files/proc-fd.js';

// The Linux file mechanism on the real kernel, under the pipeline (a fake driver carrying it, so no
// sandbox is needed): descriptors, not paths, decide where a call lands.
const linux = process.platform === 'linux' && procFdUsable();
const root = process.getuid?.() === 0;
const rules = {
  protectedPaths: DEFAULT_PROTECTED_PATHS,
  homeProtectedPaths: DEFAULT_HOME_PROTECTED_PATHS,
  hiddenPaths: [],
};
const withFiles = () =>
  createFakeDriver({
    capabilities: ['fs.confine', 'net.none', 'proc.deny-spawn', 'files'],
    files: createLinuxFiles(rules),
  });

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
const tmp = () => {
  const d = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'aleph-linux-files-')));
  chmodSync(d, 0o755);
  dirs.push(d);
  return d;
};

function setup() {
  const base = tmp();
  const sandbox = new WorkspaceSandbox({ driver: withFiles(), workspaceRoot: path.join(base, 'ws') });
  return { base, sandbox, files: sandbox.files('linux') };
}

const code = (p: Promise<unknown>) =>
  p.then(
    () => 'ok',
    (e: unknown) => (isAlephError(e) ? e.code : String(e)),
  );

describeDriverConformance('the Linux file mechanism (on a fake driver)', withFiles, { platforms: ['linux'] });

describe.runIf(linux)(
  `Linux files: descriptors${linux ? '' : ' [skipped: needs Linux with /proc/self/fd]'}`,
  () => {
    it('a directory swapped for a link after it was opened is not followed: the held descriptor stays inside', () => {
      const base = tmp();
      mkdirSync(path.join(base, 'outside'));
      writeFileSync(path.join(base, 'outside', 'f.txt'), 'host-secret');
      mkdirSync(path.join(base, 'ws', 'd'), { recursive: true });
      writeFileSync(path.join(base, 'ws', 'd', 'f.txt'), 'inside');
      const ops = procFdOps(undefined);
      const rootFd = openRoot(path.join(base, 'ws'));
      const d = ops.lookup(rootFd, 'd');
      expect(d?.type).toBe('directory');
      renameSync(path.join(base, 'ws', 'd'), path.join(base, 'ws', 'd.orig'));
      symlinkSync(path.join(base, 'outside'), path.join(base, 'ws', 'd'));
      const f = ops.lookup(d?.handle as number, 'f.txt');
      expect(readFileSync(procPath(f?.handle as number), 'utf8')).toBe('inside');
      expect(ops.lookup(rootFd, 'd')?.type).toBe('symlink');
      for (const fd of [f?.handle, d?.handle, rootFd]) closeSync(fd as number);
    });

    it('a root whose path goes through a link is refused', () => {
      const base = tmp();
      mkdirSync(path.join(base, 'real'));
      symlinkSync(path.join(base, 'real'), path.join(base, 'link'));
      expect(() => openRoot(path.join(base, 'link'))).toThrow(/ELOOP/);
    });

    it('a FIFO planted in the workspace is refused, not opened (no hang)', async () => {
      const { files, sandbox } = setup();
      const ws = (await sandbox.forSession('linux')).cwd;
      execFileSync('mkfifo', [path.join(ws, 'pipe')]);
      expect(await code(files.readFile('pipe'))).toBe('ALEPH_INVALID_PATH');
      expect(await code(files.writeFile('pipe', 'x'))).toBe('ALEPH_INVALID_PATH');
    });

    it('10 MiB round trip; maxBytes on a file that is too large; no temp file left by a refused write', async () => {
      const { files, sandbox } = setup();
      const ws = (await sandbox.forSession('linux')).cwd;
      const big = new Uint8Array(10 * 1024 * 1024).map((_, i) => i & 0xff);
      await files.writeFile('big.bin', big);
      const back = await files.readFile('big.bin');
      expect(back.byteLength).toBe(big.byteLength);
      expect(Buffer.compare(Buffer.from(back), Buffer.from(big))).toBe(0);
      expect(await code(files.readFile('big.bin', { maxBytes: 1024 }))).toBe('ALEPH_FILE_TOO_LARGE');
      expect(await code(files.writeFile('other.bin', big, { maxBytes: 1024 }))).toBe('ALEPH_FILE_TOO_LARGE');
      expect(readdirSync(ws).sort()).toEqual(['big.bin']);
    });

    it('a recursive delete removes a link inside the tree, never what it points to', async () => {
      const { files, sandbox, base } = setup();
      const ws = (await sandbox.forSession('linux')).cwd;
      mkdirSync(path.join(base, 'keep'));
      writeFileSync(path.join(base, 'keep', 'precious'), 'x');
      mkdirSync(path.join(ws, 'tree', 'deep'), { recursive: true });
      symlinkSync(path.join(base, 'keep'), path.join(ws, 'tree', 'deep', 'link'));
      await files.delete('tree', { recursive: true });
      expect(existsSync(path.join(ws, 'tree'))).toBe(false);
      expect(readFileSync(path.join(base, 'keep', 'precious'), 'utf8')).toBe('x');
    });

    it('reads a file the walk resolved, never a name a command swapped in after it', async () => {
      // The final object is reopened through its own O_PATH descriptor (/proc/self/fd/N), not by name.
      const base = tmp();
      writeFileSync(path.join(base, 'f'), 'checked');
      const ops = procFdOps(undefined);
      const rootFd = openRoot(base);
      const node = ops.lookup(rootFd, 'f');
      renameSync(path.join(base, 'f'), path.join(base, 'f.moved'));
      writeFileSync(path.join(base, 'f'), 'swapped');
      expect(readFileSync(procPath(node?.handle as number), 'utf8')).toBe('checked');
      closeSync(node?.handle as number);
      closeSync(rootFd);
    });
  },
);

describe.runIf(linux && root)(
  `Linux files: ownership on a root host${linux && root ? '' : ' [skipped: needs root on Linux]'}`,
  () => {
    it("what a write creates belongs to the workspace's owner; no set-id bit, even under a set-gid directory", async () => {
      const { files, sandbox } = setup();
      const ws = (await sandbox.forSession('linux')).cwd;
      chownSync(ws, 65534, 65534);
      chmodSync(ws, 0o2775);
      await files.writeFile('a/b/c.txt', 'owned', { mode: 0o4755 });
      for (const [p, mode] of [
        ['a', 0o755],
        ['a/b', 0o755],
        ['a/b/c.txt', 0o755],
      ] as const) {
        const s = statSync(path.join(ws, p));
        expect([p, s.uid, s.gid, s.mode & 0o7777]).toEqual([p, 65534, 65534, mode]);
      }
      await files.writeFile('a/b/c.txt', 'again');
      expect(statSync(path.join(ws, 'a/b/c.txt')).uid).toBe(65534);
    });
  },
);
