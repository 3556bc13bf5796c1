// The macOS driver's file mechanism (planned; tested against a fake binding off macOS). Node has no
// openat() here, so a path is resolved beneath its root by the pipeline's walk (lstat and readlink per
// component) and then opened by its full, link-free path with O_NOFOLLOW_ANY: a link swapped in after
// the walk makes the open fail (ELOOP) instead of leading out. What cannot be made safe that way is
// refused with ALEPH_CAPABILITY_UNSUPPORTED: creating directories and deleting (mkdir, unlink and rmdir
// by path follow links in the parents), and atomic replace (rename by path does too): writes go in place.
import { createReadStream, type Stats } from 'node:fs';
import path from 'node:path';
import {
  type DirectoryEntry,
  DriverError,
  type DriverFiles,
  type DriverFileTarget,
  type FileRules,
  type FileStat,
  type FileType,
  releaseWalk,
  type WalkOps,
  type WalkResult,
  walkBeneath,
} from '@aleph/sandbox-core';
import { type MacosFs, nodeMacosFs } from './files-binding.js';

const typeOf = (s: { isFile(): boolean; isDirectory(): boolean; isSymbolicLink(): boolean }): FileType =>
  s.isFile() ? 'file' : s.isDirectory() ? 'directory' : s.isSymbolicLink() ? 'symlink' : 'other';

const statOf = (s: Stats): FileStat => ({
  type: typeOf(s),
  size: s.size,
  mode: s.mode & 0o7777,
  mtimeMs: s.mtimeMs,
});

function unsupported(target: DriverFileTarget, what: string, instead: string): DriverError {
  return new DriverError(
    'ALEPH_CAPABILITY_UNSUPPORTED',
    'macos',
    `${target.operation}: path ${JSON.stringify(target.path)}: ${what} is not done on macOS, where Node can only act by full path and the parents' links would be followed (no openat/mkdirat/unlinkat/renameat here); ${instead}`,
    { details: { missing: ['files'] } },
  );
}

/** The walk's primitives over paths (the root is link-free: the pipeline's realpath). */
function walkOps(fs: MacosFs): WalkOps<string> {
  return {
    lookup(dir, name) {
      const p = path.join(dir, name);
      const s = fs.lstat(p);
      return s === undefined ? undefined : { handle: p, type: typeOf(s) };
    },
    readlink: (dir, name) => fs.readlink(path.join(dir, name)),
    release: () => {},
  };
}

function enoent(): Error {
  return Object.assign(new Error('no such file or directory'), { code: 'ENOENT' });
}

/**
 * The macOS {@link DriverFiles}: reads, stat and list by a link-free path opened with `O_NOFOLLOW_ANY`
 * (the descriptor then read), writes in place on such a descriptor (not atomic; the content is collected
 * first, so a failed write leaves the file as it was); creating directories and deleting refused.
 *
 * @example
 * ```ts
 * createMacosFiles({ protectedPaths: ['.git/hooks'], homeProtectedPaths: [], hiddenPaths: [] })
 * ```
 */
export function createMacosFiles(rules: FileRules, fs: MacosFs = nodeMacosFs): DriverFiles {
  const ops = walkOps(fs);
  const walk = <R>(
    target: DriverFileTarget,
    follow: boolean,
    use: (w: WalkResult<string>) => R,
    write = false,
  ): R => {
    const w = walkBeneath(ops, target.root, target, { followFinal: follow, write });
    try {
      return use(w);
    } finally {
      releaseWalk(ops, w);
    }
  };
  /** Opens what the walk found, link-free, and hands the descriptor to `use` (closing it after). */
  const opened = <R>(at: string, intent: 'read' | 'directory', use: (fd: number, s: Stats) => R): R => {
    const fd = fs.open(at, intent);
    try {
      return use(fd, fs.fstat(fd));
    } finally {
      fs.close(fd);
    }
  };
  const regular = (target: DriverFileTarget, at: string, s: Stats) => {
    target.check(at, 'read', s.isDirectory() ? 'directory' : s.isFile() ? 'file' : 'other');
    if (s.isDirectory()) throw target.error('ALEPH_IS_A_DIRECTORY', 'is a directory');
    if (!s.isFile()) throw target.error('ALEPH_INVALID_PATH', 'is not a regular file', 'pass a regular file');
  };
  return {
    rules,
    async stat(target, { followSymlinks }) {
      return walk(target, followSymlinks, (w) => {
        if (w.node === undefined) throw enoent();
        target.check(w.resolved, 'read', 'other');
        // A final link (not followed) is described by the walk: its target's length is its size.
        if (w.node.type === 'symlink') {
          return {
            type: 'symlink',
            size: Buffer.byteLength(fs.readlink(w.node.handle)),
            mode: 0o755,
            mtimeMs: 0,
          };
        }
        return opened(w.resolved, 'read', (_fd, s) => statOf(s));
      });
    },
    async list(target) {
      return walk(target, true, (w) => {
        if (w.node === undefined) throw enoent();
        target.check(w.resolved, 'read', 'directory');
        if (w.node.type !== 'directory') throw target.error('ALEPH_NOT_A_DIRECTORY', 'is not a directory');
        // Listed by path between two link-free opens of the same directory.
        const before = opened(w.resolved, 'directory', (_fd, s) => `${s.dev}:${s.ino}`);
        const entries = fs.readdir(w.resolved);
        const after = opened(w.resolved, 'directory', (_fd, s) => `${s.dev}:${s.ino}`);
        if (before !== after)
          throw target.error('ALEPH_INVALID_PATH', 'changed while it was listed', 'list it again');
        return entries.map((e): DirectoryEntry => ({ name: e.name, type: typeOf(e) }));
      });
    },
    async read(target, { maxBytes }) {
      return walk(target, true, (w) => {
        if (w.node === undefined) throw enoent();
        return opened(w.resolved, 'read', (fd, s) => {
          regular(target, w.resolved, s);
          if (s.size > maxBytes) {
            throw target.error(
              'ALEPH_FILE_TOO_LARGE',
              `is ${s.size} bytes, more than maxBytes = ${maxBytes}`,
            );
          }
          return fs.readAll(fd, s.size);
        });
      });
    },
    async readStream(target) {
      return walk(target, true, (w) => {
        if (w.node === undefined) throw enoent();
        const fd = fs.open(w.resolved, 'read');
        try {
          regular(target, w.resolved, fs.fstat(fd));
        } catch (error) {
          fs.close(fd);
          throw error;
        }
        return createReadStream('', { fd, autoClose: true });
      });
    },
    async write(target, content, { mode, maxBytes, signal }) {
      let w: WalkResult<string>;
      try {
        w = walk(target, false, (found) => found, true);
      } catch (error) {
        if ((error as { code?: string }).code !== 'ALEPH_FILE_NOT_FOUND') throw error;
        throw unsupported(
          target,
          'creating missing parent directories',
          'create them first with a sandboxed `mkdir -p`, then write',
        );
      }
      if (w.parent === undefined || w.name === undefined)
        throw target.error('ALEPH_IS_A_DIRECTORY', 'is a directory');
      if (w.node?.type === 'symlink') {
        throw target.error(
          'ALEPH_INVALID_PATH',
          `is a symbolic link (to ${fs.readlink(w.node.handle)}); writes never go through a link`,
          "write to the link's target path instead, or delete the link first",
        );
      }
      if (w.node?.type === 'directory') throw target.error('ALEPH_IS_A_DIRECTORY', 'is a directory');
      target.check(w.resolved, 'write', 'file');
      const chunks: Uint8Array[] = [];
      let bytes = 0;
      for await (const chunk of content) {
        if (signal?.aborted) throw signal.reason;
        bytes += chunk.byteLength;
        if (bytes > maxBytes) {
          throw target.error('ALEPH_FILE_TOO_LARGE', `has more than maxBytes = ${maxBytes} bytes of content`);
        }
        chunks.push(chunk);
      }
      const fd = fs.open(w.resolved, 'write');
      try {
        const s = fs.fstat(fd);
        if (!s.isFile())
          throw target.error('ALEPH_INVALID_PATH', 'is not a regular file', 'pass a regular file');
        fs.replaceContent(fd, Buffer.concat(chunks), mode ?? (w.node === undefined ? 0o644 : s.mode & 0o777));
      } finally {
        fs.close(fd);
      }
      return { bytes };
    },
    async delete(target) {
      throw unsupported(target, 'deleting', 'delete it with a sandboxed command (rm) instead');
    },
  };
}
