/**
 * Descriptor-relative file access without native code: `/proc/self/fd/DIRFD/NAME` opened with
 * O_PATH|O_NOFOLLOW is openat(DIRFD, NAME) that never follows NAME (the magic link /proc/self/fd/DIRFD
 * is the directory itself, whatever its path has become). The walk's primitives (WalkOps) on top of it.
 */
import {
  chmodSync,
  chownSync,
  closeSync,
  constants,
  fstatSync,
  mkdirSync,
  openSync,
  readlinkSync,
} from 'node:fs';
import type { FileType, WalkNode, WalkOps } from '@aleph/sandbox-core';

/** `O_PATH` (the same on every Linux architecture Node runs on). Node passes numeric flags through. */
export const O_PATH = 0o10000000;
/** Open without following a final link, as a handle only (no read or write through it). */
export const PATH_FLAGS = O_PATH | constants.O_NOFOLLOW;

/** `/proc/self/fd/FD`, or `/proc/self/fd/FD/NAME`: the magic link of a descriptor, and a name in it. */
export function procPath(fd: number, name?: string): string {
  return name === undefined ? `/proc/self/fd/${fd}` : `/proc/self/fd/${fd}/${name}`;
}

/** The type of what a descriptor (O_PATH included) refers to. */
export function typeOfMode(mode: number): FileType {
  const format = mode & constants.S_IFMT;
  if (format === constants.S_IFREG) return 'file';
  if (format === constants.S_IFDIR) return 'directory';
  if (format === constants.S_IFLNK) return 'symlink';
  return 'other';
}

/** Closes a descriptor, ignoring a descriptor already closed. */
export function closeQuietly(fd: number): void {
  try {
    closeSync(fd);
  } catch {
    // already closed
  }
}

/**
 * Opens `root` (absolute, link-free: a realpath) as an O_PATH directory descriptor, component by
 * component from `/` without following any link: a root whose path now goes through a link (a grant
 * inside a writable directory that a command replaced) is refused rather than followed.
 *
 * @throws an `ELOOP` error for a link on the way, `ENOTDIR` for a component that is not a directory.
 */
export function openRoot(root: string): number {
  let fd = openSync('/', PATH_FLAGS | constants.O_DIRECTORY);
  try {
    for (const name of root.split('/').filter((c) => c !== '')) {
      const next = openSync(procPath(fd, name), PATH_FLAGS);
      closeSync(fd);
      fd = next;
      const type = typeOfMode(fstatSync(fd).mode);
      if (type !== 'directory') {
        const code = type === 'symlink' ? 'ELOOP' : 'ENOTDIR';
        throw Object.assign(new Error(`${code}: ${root} goes through ${name}, a ${type}`), { code });
      }
    }
    return fd;
  } catch (error) {
    closeQuietly(fd);
    throw error;
  }
}

/** Who new directories and files belong to (a root host writes as the root directory's owner). */
export interface Ownership {
  readonly uid: number;
  readonly gid: number;
}

/**
 * The walk's primitives on O_PATH descriptors. `owner`: chown what `mkdir` creates (a root host).
 * Every directory made is `0o755` exactly (no set-gid inherited from its parent).
 */
export function procFdOps(owner: Ownership | undefined): WalkOps<number> {
  return {
    lookup(dir: number, name: string): WalkNode<number> | undefined {
      let fd: number;
      try {
        fd = openSync(procPath(dir, name), PATH_FLAGS);
      } catch (error) {
        if ((error as { code?: string }).code === 'ENOENT') return undefined;
        throw error;
      }
      try {
        return { handle: fd, type: typeOfMode(fstatSync(fd).mode) };
      } catch (error) {
        closeQuietly(fd);
        throw error;
      }
    },
    readlink: (dir, name) => readlinkSync(procPath(dir, name)),
    mkdir(dir, name) {
      mkdirSync(procPath(dir, name), { mode: 0o700 });
      const fd = openSync(procPath(dir, name), PATH_FLAGS | constants.O_DIRECTORY);
      try {
        // Through the descriptor's magic link: exactly the directory just made.
        if (owner !== undefined) chownSync(procPath(fd), owner.uid, owner.gid);
        chmodSync(procPath(fd), 0o755);
      } finally {
        closeSync(fd);
      }
    },
    release: closeQuietly,
  };
}
