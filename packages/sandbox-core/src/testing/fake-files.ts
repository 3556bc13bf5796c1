// The fake driver's file mechanism: the pipeline's walk (walkBeneath) over plain host paths. It has the
// semantics a real mechanism must have (links resolved beneath the root, atomic writes, no set-id bits),
// but acts by path, so a command racing it could redirect it: for tests only, never a real driver.
import { randomBytes } from 'node:crypto';
import {
  chmodSync,
  closeSync,
  createReadStream,
  fstatSync,
  fsyncSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  renameSync,
  rmSync,
  type Stats,
  unlinkSync,
  writeSync,
} from 'node:fs';
import path from 'node:path';
import type { DriverFiles, DriverFileTarget, FileRules } from '../files/driver-files.js';
import type { DirectoryEntry, FileStat, FileType } from '../files/types.js';
import { releaseWalk, type WalkOps, type WalkResult, walkBeneath } from '../files/walk.js';

const typeOf = (
  s: Stats | { isFile(): boolean; isDirectory(): boolean; isSymbolicLink(): boolean },
): FileType =>
  s.isFile() ? 'file' : s.isDirectory() ? 'directory' : s.isSymbolicLink() ? 'symlink' : 'other';

const ops: WalkOps<string> = {
  lookup(dir, name) {
    const p = path.join(dir, name);
    try {
      return { handle: p, type: typeOf(lstatSync(p)) };
    } catch (error) {
      if ((error as { code?: string }).code === 'ENOENT') return undefined;
      throw error;
    }
  },
  readlink: (dir, name) => readlinkSync(path.join(dir, name)),
  mkdir: (dir, name) => mkdirSync(path.join(dir, name), { mode: 0o755 }),
  release: () => {},
};

const statOf = (s: Stats): FileStat => ({
  type: typeOf(s),
  size: s.size,
  mode: s.mode & 0o7777,
  mtimeMs: s.mtimeMs,
});

function enoent(): Error {
  return Object.assign(new Error('no such file or directory'), { code: 'ENOENT' });
}

/** Walks, and hands the walk's end to `use`. */
function at<R>(
  target: DriverFileTarget,
  follow: boolean,
  use: (w: WalkResult<string>) => R,
  create = false,
): R {
  const walked = walkBeneath(ops, target.root, target, {
    followFinal: follow,
    createParents: create,
    write: create,
  });
  try {
    return use(walked);
  } finally {
    releaseWalk(ops, walked);
  }
}

/** A regular file's path after the read check, or the typed error. */
function regularFile(target: DriverFileTarget, w: WalkResult<string>): string {
  if (w.node === undefined) throw enoent();
  const kind = w.node.type === 'directory' ? 'directory' : w.node.type === 'file' ? 'file' : 'other';
  target.check(w.resolved, 'read', kind);
  if (w.node.type === 'directory') throw target.error('ALEPH_IS_A_DIRECTORY', 'is a directory');
  if (w.node.type !== 'file')
    throw target.error('ALEPH_INVALID_PATH', 'is not a regular file', 'pass a regular file');
  return w.node.handle;
}

/**
 * A {@link DriverFiles} over host paths for tests and fakes (see the file header: not safe against a
 * command running at the same time).
 *
 * @example
 * ```ts
 * createFakeDriver({ files: createFakeFiles({ rules: { protectedPaths: ['.git/hooks'] } }) })
 * ```
 */
export function createFakeFiles(options: { readonly rules?: Partial<FileRules> } = {}): DriverFiles {
  return {
    ...(options.rules === undefined ? {} : { rules: options.rules }),
    async stat(target, { followSymlinks }) {
      return at(target, followSymlinks, (w) => {
        if (w.node === undefined) throw enoent();
        target.check(w.resolved, 'read', 'other');
        return statOf(lstatSync(w.node.handle));
      });
    },
    async list(target) {
      return at(target, true, (w) => {
        if (w.node === undefined) throw enoent();
        target.check(w.resolved, 'read', 'directory');
        if (w.node.type !== 'directory') throw target.error('ALEPH_NOT_A_DIRECTORY', 'is not a directory');
        return readdirSync(w.node.handle, { withFileTypes: true }).map(
          (d): DirectoryEntry => ({ name: d.name, type: typeOf(d) }),
        );
      });
    },
    async read(target, { maxBytes }) {
      return at(target, true, (w) => {
        const file = regularFile(target, w);
        const size = lstatSync(file).size;
        if (size > maxBytes) {
          throw target.error('ALEPH_FILE_TOO_LARGE', `is ${size} bytes, more than maxBytes = ${maxBytes}`);
        }
        return new Uint8Array(readFileSync(file));
      });
    },
    async readStream(target) {
      return at(target, true, (w) => createReadStream(regularFile(target, w)));
    },
    async write(target, content, { mode, maxBytes, signal }) {
      const { dir, name, existing, resolved } = at(
        target,
        false,
        (w) => {
          if (w.parent === undefined || w.name === undefined) {
            throw target.error('ALEPH_IS_A_DIRECTORY', 'is a directory');
          }
          if (w.node?.type === 'symlink') {
            throw target.error(
              'ALEPH_INVALID_PATH',
              `is a symbolic link (to ${readlinkSync(w.node.handle)}); writes never go through a link`,
              "write to the link's target path instead, or delete the link first",
            );
          }
          if (w.node?.type === 'directory') throw target.error('ALEPH_IS_A_DIRECTORY', 'is a directory');
          target.check(w.resolved, 'write', 'file');
          const existing = w.node === undefined ? undefined : lstatSync(w.node.handle).mode & 0o777;
          return { dir: w.parent, name: w.name, existing, resolved: w.resolved };
        },
        true,
      );
      const temp = path.join(dir, `.${name}.aleph-${randomBytes(6).toString('hex')}`);
      const fd = openSync(temp, 'wx', 0o600);
      let bytes = 0;
      try {
        for await (const chunk of content) {
          if (signal?.aborted) throw signal.reason;
          bytes += chunk.byteLength;
          if (bytes > maxBytes) {
            throw target.error(
              'ALEPH_FILE_TOO_LARGE',
              `has more than maxBytes = ${maxBytes} bytes of content`,
            );
          }
          for (let off = 0; off < chunk.byteLength; ) off += writeSync(fd, chunk, off);
        }
        fsyncSync(fd);
        chmodSync(temp, mode ?? existing ?? 0o644);
        closeSync(fd);
        renameSync(temp, resolved);
      } catch (error) {
        try {
          fstatSync(fd);
          closeSync(fd);
        } catch {
          // closed already
        }
        rmSync(temp, { force: true });
        throw error;
      }
      return { bytes };
    },
    async delete(target, { recursive }) {
      at(target, false, (w) => {
        if (w.node === undefined) throw enoent();
        const kind = w.node.type === 'directory' ? 'directory' : w.node.type === 'file' ? 'file' : 'other';
        target.check(w.resolved, 'delete', kind);
        if (w.node.type === 'directory') {
          if (!recursive) throw target.error('ALEPH_IS_A_DIRECTORY', 'is a directory');
          rmSync(w.node.handle, { recursive: true });
        } else unlinkSync(w.node.handle);
      });
    },
  };
}
