/**
 * The Linux driver's file mechanism (DriverFiles): every path walked beneath its root on O_PATH
 * descriptors (/proc/self/fd, see proc-fd.ts), the final object reopened through its own descriptor, so
 * nothing a sandboxed command changes on the way can redirect a read or a write out of the workspace.
 */
import {
  accessSync,
  constants,
  createReadStream,
  fstatSync,
  openSync,
  read,
  readdirSync,
  readlinkSync,
  readSync,
  rmdirSync,
  type Stats,
  unlinkSync,
} from 'node:fs';
import { promisify } from 'node:util';
import {
  type DirectoryEntry,
  type DriverFiles,
  type DriverFileTarget,
  type FileRules,
  type FileStat,
  releaseWalk,
  type WalkResult,
  walkBeneath,
} from '@aleph/sandbox-core';
import { atomicWrite } from './atomic-write.js';
import { closeQuietly, type Ownership, openRoot, procFdOps, procPath, typeOfMode } from './proc-fd.js';
import { emptyDirectory } from './remove-tree.js';

/** Reads of at most this size are done synchronously (one read, no thread-pool round trips). */
const SMALL_READ = 256 * 1024;
const readAsync = promisify(read);

const statOf = (s: Stats): FileStat => ({
  type: typeOfMode(s.mode),
  size: s.size,
  mode: s.mode & 0o7777,
  mtimeMs: s.mtimeMs,
});

const kindOf = (type: string): 'file' | 'directory' | 'other' =>
  type === 'file' ? 'file' : type === 'directory' ? 'directory' : 'other';

function enoent(): Error {
  return Object.assign(new Error('no such file or directory'), { code: 'ENOENT' });
}

/** Options of {@link createLinuxFiles}. */
export interface LinuxFilesOptions {
  /** Give what is written the owner of its root directory (the host runs as root). Default: when uid 0. */
  readonly chownToRootOwner?: boolean;
}

/**
 * Whether this host can resolve paths on descriptors: `/proc/self/fd` must be there (a host without
 * procfs, or with it masked, gets `undefined` and file calls are refused instead).
 */
export function procFdUsable(): boolean {
  try {
    accessSync('/proc/self/fd', constants.R_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * The Linux {@link DriverFiles}: the pipeline's walk on O_PATH descriptors (`/proc/self/fd/DIRFD/NAME`
 * with `O_NOFOLLOW`); reads reopen the checked regular file through its own descriptor; writes are atomic
 * (a temp file beside it, renamed over it on the directory's descriptor), owned by the root's owner when
 * the host is root, never set-id; deletes unlink by name in the held directory.
 *
 * @example
 * ```ts
 * const files = createLinuxFiles({ protectedPaths: ['.git/hooks'], homeProtectedPaths: [], hiddenPaths: [] })
 * ```
 */
export function createLinuxFiles(rules: FileRules, options: LinuxFilesOptions = {}): DriverFiles {
  const chown = options.chownToRootOwner ?? process.getuid?.() === 0;
  /** Walks `target` and hands the end (and the root's owner) to `use`; releases every descriptor. */
  const walk = async <R>(
    target: DriverFileTarget,
    follow: boolean,
    use: (w: WalkResult<number>, owner: Ownership | undefined) => R | Promise<R>,
    create = false,
  ): Promise<R> => {
    const root = openRoot(target.root);
    try {
      const owner = chown ? ownerOf(root) : undefined;
      const ops = procFdOps(owner);
      const w = walkBeneath(ops, root, target, { followFinal: follow, createParents: create, write: create });
      try {
        return await use(w, owner);
      } finally {
        releaseWalk(ops, w);
      }
    } finally {
      closeQuietly(root);
    }
  };
  /** The walk's end as a checked regular file, reopened for reading through its own descriptor. */
  const openForRead = (target: DriverFileTarget, w: WalkResult<number>): { fd: number; size: number } => {
    if (w.node === undefined) throw enoent();
    target.check(w.resolved, 'read', kindOf(w.node.type));
    if (w.node.type === 'directory') throw target.error('ALEPH_IS_A_DIRECTORY', 'is a directory');
    if (w.node.type !== 'file') {
      throw target.error(
        'ALEPH_INVALID_PATH',
        'is not a regular file (a FIFO, socket or device)',
        'pass a regular file',
      );
    }
    const fd = openSync(procPath(w.node.handle), constants.O_RDONLY | constants.O_NOCTTY);
    return { fd, size: fstatSync(fd).size };
  };
  return {
    rules,
    stat: (target, { followSymlinks }) =>
      walk(target, followSymlinks, (w) => {
        if (w.node === undefined) throw enoent();
        target.check(w.resolved, 'read', kindOf(w.node.type));
        return statOf(fstatSync(w.node.handle));
      }),
    list: (target) =>
      walk(target, true, (w) => {
        if (w.node === undefined) throw enoent();
        target.check(w.resolved, 'read', kindOf(w.node.type));
        if (w.node.type !== 'directory') throw target.error('ALEPH_NOT_A_DIRECTORY', 'is not a directory');
        return readdirSync(procPath(w.node.handle), { withFileTypes: true }).map(
          (d): DirectoryEntry => ({
            name: d.name,
            type: d.isFile()
              ? 'file'
              : d.isDirectory()
                ? 'directory'
                : d.isSymbolicLink()
                  ? 'symlink'
                  : 'other',
          }),
        );
      }),
    read: (target, { maxBytes, signal }) =>
      walk(target, true, (w) => readAll(target, openForRead(target, w), maxBytes, signal)),
    readStream: (target) =>
      walk(target, true, (w) => createReadStream('', { fd: openForRead(target, w).fd, autoClose: true })),
    write: (target, content, { mode, maxBytes, signal }) =>
      walk(
        target,
        false,
        async (w, owner) => {
          if (w.parent === undefined || w.name === undefined) {
            throw target.error('ALEPH_IS_A_DIRECTORY', 'is a directory');
          }
          if (w.node?.type === 'symlink') {
            throw target.error(
              'ALEPH_INVALID_PATH',
              `is a symbolic link (to ${readlinkSync(procPath(w.parent, w.name))}); writes never go through a link`,
              "write to the link's target path instead, or delete the link first",
            );
          }
          if (w.node?.type === 'directory') throw target.error('ALEPH_IS_A_DIRECTORY', 'is a directory');
          if (w.node !== undefined && w.node.type !== 'file') {
            throw target.error(
              'ALEPH_INVALID_PATH',
              'is not a regular file',
              'delete it first, or pass another path',
            );
          }
          target.check(w.resolved, 'write', 'file');
          const kept = w.node === undefined ? 0o644 : fstatSync(w.node.handle).mode & 0o777;
          const bytes = await atomicWrite(target, w.parent, w.name, content, {
            mode: mode ?? kept,
            owner,
            maxBytes,
            signal,
          });
          return { bytes };
        },
        true,
      ),
    delete: (target, { recursive }) =>
      walk(target, false, (w) => {
        if (w.node === undefined) throw enoent();
        if (w.parent === undefined || w.name === undefined) {
          throw target.error(
            'ALEPH_INVALID_PATH',
            `resolves to ${w.resolved}, a directory on the way rather than a name in one`,
            'name the directory itself',
          );
        }
        target.check(w.resolved, 'delete', kindOf(w.node.type));
        if (w.node.type !== 'directory') return unlinkSync(procPath(w.parent, w.name));
        if (!recursive) throw target.error('ALEPH_IS_A_DIRECTORY', 'is a directory');
        emptyDirectory(w.node.handle);
        rmdirSync(procPath(w.parent, w.name));
      }),
  };
}

/** The owner of the root directory. */
function ownerOf(root: number): Ownership {
  const s = fstatSync(root);
  return { uid: s.uid, gid: s.gid };
}

/** Reads a reopened file to its end, within `maxBytes` (also when it grows meanwhile); closes it. */
async function readAll(
  target: DriverFileTarget,
  file: { fd: number; size: number },
  maxBytes: number,
  signal: AbortSignal | undefined,
): Promise<Uint8Array> {
  const tooLarge = (size: number) =>
    target.error('ALEPH_FILE_TOO_LARGE', `is ${size} bytes, more than maxBytes = ${maxBytes}`);
  try {
    if (file.size > maxBytes) throw tooLarge(file.size);
    // A small file in one synchronous read; a large one without blocking, chunk by chunk.
    const small = file.size <= SMALL_READ;
    const chunk = small ? file.size + 1 : 1024 * 1024;
    const chunks: Buffer[] = [];
    let total = 0;
    for (;;) {
      if (signal?.aborted) throw signal.reason;
      const buf = Buffer.allocUnsafe(chunk);
      const n = small
        ? readSync(file.fd, buf, 0, chunk, null)
        : (await readAsync(file.fd, buf, 0, chunk, null)).bytesRead;
      if (n === 0) break;
      total += n;
      if (total > maxBytes) throw tooLarge(total);
      chunks.push(buf.subarray(0, n));
    }
    const all = chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, total);
    return new Uint8Array(all.buffer, all.byteOffset, all.byteLength);
  } finally {
    closeQuietly(file.fd);
  }
}
