/**
 * Each session's scratch space on the host: `<stateDir>/session-tmp/<driver instance>/<session key>`,
 * the sandbox's `/tmp` (tiers 1–2, bound from its descriptor) or its `TMPDIR` (tier 3). It is kept
 * between the session's commands, seen by no other session, and removed when the session ends
 * (`closeSession`), when the driver is disposed, or — after a crash — by the next driver of this state
 * directory once the process that made it is gone.
 *
 * It lies in the state directory (mode 0700, the host user's), so nothing a command leaves there is
 * reachable by another host user, whatever its mode. On a root host the directory belongs to uid 65534
 * and reaches the command through an idmapped mount showing it as the run's own uid (each run has its
 * own), as the workspace does; what a command writes there belongs to 65534 on the host, never to root.
 */
import { randomBytes } from 'node:crypto';
import {
  chmodSync,
  chownSync,
  closeSync,
  constants,
  fstatSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  rmdirSync,
  unlinkSync,
} from 'node:fs';
import path from 'node:path';
import { closeQuietly, O_PATH, PATH_FLAGS, procPath } from '../files/proc-fd.js';
import { emptyDirectory } from '../files/remove-tree.js';
import type { SessionTmpMountPoint } from '../profile/session-tmp-mount.js';

/** The host owner of a session's scratch space on a root host. */
export const SESSION_TMP_OWNER = 65534;

/** Whether the process `pid` still runs (EPERM: it does, as another user). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The sessions' scratch spaces of one driver. */
export class SessionTmps {
  readonly #root: string;
  readonly #instanceDir: string;
  readonly #isRoot: boolean;
  readonly #made = new Set<string>();

  /** @param stateDir the driver's state directory; `isRoot`: the host runs as root. */
  constructor(stateDir: string, isRoot: boolean) {
    this.#root = path.join(stateDir, 'session-tmp');
    this.#instanceDir = path.join(this.#root, `${process.pid}-${randomBytes(6).toString('hex')}`);
    this.#isRoot = isRoot;
  }

  /** Where the session `key`'s scratch space is (made by {@link ensure}). */
  dirFor(key: string): string {
    return path.join(this.#instanceDir, key);
  }

  /**
   * Makes a session's scratch space (`dir`, as {@link dirFor} named it) if it is not there: mode 1777 (as
   * a /tmp is), on a root host owned by {@link SESSION_TMP_OWNER}.
   *
   * @throws {Error} for a directory {@link dirFor} did not name.
   */
  ensure(dir: string, mountPoints: readonly SessionTmpMountPoint[] = []): void {
    if (path.dirname(dir) !== this.#instanceDir) throw new Error(`${dir} is not a session's scratch space`);
    if (!this.#made.has(dir) || !lstatSync(dir, { throwIfNoEntry: false })?.isDirectory()) {
      mkdirSync(this.#instanceDir, { recursive: true, mode: 0o700 });
      try {
        mkdirSync(dir, { mode: 0o700 });
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      }
      if (this.#isRoot) {
        try {
          chownSync(dir, SESSION_TMP_OWNER, SESSION_TMP_OWNER);
        } catch {
          // 65534 is not mapped here (a user namespace of a container): the directory stays the host
          // user's; mode 1777 still lets every run write it.
        }
      }
      chmodSync(dir, 0o1777);
      this.#made.add(dir);
    }
    if (mountPoints.length === 0) return;
    const root = openSync(dir, PATH_FLAGS | constants.O_DIRECTORY);
    try {
      for (const point of mountPoints) makeMountPoint(root, point);
    } finally {
      closeQuietly(root);
    }
  }

  /** Removes the session's scratch space with what it holds (links removed, never followed). */
  close(key: string): void {
    const dir = this.dirFor(key);
    this.#made.delete(dir);
    removeTree(dir);
  }

  /** Removes every scratch space of this driver. */
  dispose(): void {
    this.#made.clear();
    removeTree(this.#instanceDir);
  }

  /** Removes the scratch spaces left by drivers whose process is gone (a crash). */
  prune(): void {
    let entries: string[];
    try {
      entries = readdirSync(this.#root);
    } catch {
      return;
    }
    for (const name of entries) {
      const pid = Number(/^(\d+)-[0-9a-f]+$/.exec(name)?.[1]);
      if (Number.isSafeInteger(pid) && pid !== process.pid && !alive(pid)) {
        removeTree(path.join(this.#root, name));
      }
    }
  }
}

/** Removes `dir` and all it holds on descriptors (a link a command planted is removed, never followed). */
function removeTree(dir: string): void {
  let fd: number;
  try {
    fd = openSync(dir, PATH_FLAGS | constants.O_DIRECTORY);
  } catch {
    return;
  }
  try {
    emptyDirectory(fd);
  } finally {
    closeQuietly(fd);
  }
  rmdirSync(dir);
}

/** Enters the directory `name` in `parent`, made (0755) if missing, a link or file there replaced. */
function enterDirectory(parent: number, name: string): number {
  for (let attempt = 0; ; attempt++) {
    try {
      mkdirSync(procPath(parent, name), { mode: 0o755 });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    try {
      return openSync(procPath(parent, name), PATH_FLAGS | constants.O_DIRECTORY);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (attempt > 0 || (code !== 'ELOOP' && code !== 'ENOTDIR')) throw error;
      unlinkSync(procPath(parent, name));
    }
  }
}

/**
 * Makes the empty file `name` in `parent` unless a file is there; a link, or a directory a command of the
 * session made there (removed with what it holds, on descriptors), is replaced.
 */
function makeFile(parent: number, name: string): void {
  for (let attempt = 0; ; attempt++) {
    try {
      closeSync(openSync(procPath(parent, name), 'wx', 0o644));
      return;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST' || attempt > 0) throw error;
    }
    const fd = openSync(procPath(parent, name), PATH_FLAGS);
    const type = fstatSync(fd).mode & constants.S_IFMT;
    try {
      if (type === constants.S_IFREG) return;
      if (type === constants.S_IFDIR) emptyDirectory(fd);
    } finally {
      closeQuietly(fd);
    }
    if (type === constants.S_IFDIR) rmdirSync(procPath(parent, name));
    else unlinkSync(procPath(parent, name));
  }
}

/**
 * Makes one mount point beneath the session's scratch space (descriptor `root`), component by component
 * on descriptors: a link a command left on the way is removed, never followed.
 */
function makeMountPoint(root: number, point: SessionTmpMountPoint): void {
  const names = point.path.split('/');
  let fd = openSync(procPath(root), O_PATH | constants.O_DIRECTORY);
  try {
    for (const [i, name] of names.entries()) {
      if (i === names.length - 1 && point.file) {
        makeFile(fd, name);
        return;
      }
      const next = enterDirectory(fd, name);
      closeQuietly(fd);
      fd = next;
    }
  } finally {
    closeQuietly(fd);
  }
}
