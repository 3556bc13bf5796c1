/**
 * Small JSON files of the host user's state directory (`~/.aleph/run`) that only the host side may
 * write: read and written on a descriptor of the directory opened from `/` without following a link,
 * each trusted only when the directory and the file belong to this uid and nobody else may write them.
 */

import { randomBytes } from 'node:crypto';
import {
  closeSync,
  constants,
  fstatSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  writeSync,
} from 'node:fs';
import { closeQuietly, openRoot, procPath } from '../files/proc-fd.js';

/** Group or others may write (or, for a file, read) it. */
const FOREIGN_DIR = 0o022;
const FOREIGN_FILE = 0o077;

/** Opens `dir` (absolute, link-free) when it is a directory of this uid that nobody else can write. */
function openOwnDir(dir: string): number | undefined {
  let fd: number;
  try {
    fd = openRoot(dir);
  } catch {
    return undefined;
  }
  const st = fstatSync(fd);
  if (st.uid !== process.getuid?.() || (st.mode & FOREIGN_DIR) !== 0) {
    closeQuietly(fd);
    return undefined;
  }
  return fd;
}

/**
 * The parsed JSON of `dir/name`, or `undefined` when it is missing, unreadable, not valid JSON, or not
 * trustworthy: the directory or the file is not this uid's, someone else may write it, the file is not a
 * regular file, or a link stands anywhere on the way.
 */
export function readStateJson(dir: string, name: string): unknown {
  const dirFd = openOwnDir(dir);
  if (dirFd === undefined) return undefined;
  let fd: number | undefined;
  try {
    fd = openSync(procPath(dirFd, name), constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
    const st = fstatSync(fd);
    if (!st.isFile() || st.uid !== process.getuid?.() || (st.mode & FOREIGN_FILE) !== 0) return undefined;
    if (st.size > 1 << 20) return undefined;
    return JSON.parse(readFileSync(fd, 'utf8'));
  } catch {
    return undefined;
  } finally {
    if (fd !== undefined) closeQuietly(fd);
    closeQuietly(dirFd);
  }
}

/**
 * Writes `value` as `dir/name` (mode 0600): a new file beside it, renamed over it, on the directory's
 * descriptor. Returns false (and writes nothing) where the directory is not this uid's own.
 */
export function writeStateJson(dir: string, name: string, value: unknown): boolean {
  const dirFd = openOwnDir(dir);
  if (dirFd === undefined) return false;
  const temp = `${name}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`;
  try {
    const fd = openSync(
      procPath(dirFd, temp),
      constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
      0o600,
    );
    try {
      writeSync(fd, `${JSON.stringify(value)}\n`);
    } finally {
      closeSync(fd);
    }
    renameSync(procPath(dirFd, temp), procPath(dirFd, name));
    return true;
  } catch {
    rmSync(procPath(dirFd, temp), { force: true });
    return false;
  } finally {
    closeQuietly(dirFd);
  }
}

/** Removes `dir/name` (on the directory's descriptor), when the directory is this uid's own. */
export function removeStateFile(dir: string, name: string): void {
  const dirFd = openOwnDir(dir);
  if (dirFd === undefined) return;
  try {
    rmSync(procPath(dirFd, name), { force: true });
  } finally {
    closeQuietly(dirFd);
  }
}
