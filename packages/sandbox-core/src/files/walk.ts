// Path resolution beneath a root with RESOLVE_BENEATH semantics, on the handles of a driver's file
// mechanism (directory descriptors on Linux): component by component, a symbolic link met on the way read
// and resolved lexically on the stack of directories walked, never handed to the kernel to follow.
import type { FileAccessError } from '../file-errors.js';
import type { DriverFileTarget } from './driver-files.js';
import { gitDirectoryOnTheWay } from './git-directory.js';
import type { FileType } from './types.js';

/** At most this many symbolic links are followed while resolving one path (as the kernel's 40). */
export const MAX_SYMLINK_HOPS = 40;

/** One object a {@link WalkOps.lookup} found: its handle (open without following it) and type. */
export interface WalkNode<H> {
  readonly handle: H;
  readonly type: FileType;
}

/**
 * The primitives a driver gives the walk. Handles are whatever the driver acts on (an `O_PATH`
 * descriptor, a checked path); every method is synchronous and must not follow a final symbolic link.
 */
export interface WalkOps<H> {
  /** `name` in directory `dir`, opened without following it, or `undefined` when it does not exist. */
  lookup(dir: H, name: string): WalkNode<H> | undefined;
  /** The target text of the symbolic link `name` in `dir`. */
  readlink(dir: H, name: string): string;
  /** Creates directory `name` in `dir` (for missing parents of a write). */
  mkdir?(dir: H, name: string): void;
  /** Releases a handle the walk no longer needs (closes a descriptor). */
  release(handle: H): void;
}

/** Where a walk ended. */
export interface WalkResult<H> {
  /** The directory holding the final object; `undefined` when the path resolved to the root or via `..`. */
  readonly parent: H | undefined;
  /** The final object's name in `parent`. */
  readonly name: string | undefined;
  /** The final object (not followed when it is a link and `followFinal` is false); `undefined` if missing. */
  readonly node: WalkNode<H> | undefined;
  /** The absolute path it resolved to. */
  readonly resolved: string;
  /** Every handle the walk still holds (the directory stack, the node): release them with {@link releaseWalk}. */
  readonly held: readonly H[];
}

/** Options of {@link walkBeneath}. */
export interface WalkOptions {
  /** Follow a final symbolic link (reads, stat); false acts on the link itself (writes, deletes, lstat). */
  readonly followFinal: boolean;
  /**
   * Create missing directories on the way (writes of a file). Before the first is created the file's own
   * path is checked (`write`), so a refused write creates nothing; each directory is checked too.
   */
  readonly createParents?: boolean;
  /**
   * The walk is for a write of the final name: it is refused (`ALEPH_PATH_PROTECTED`) when a directory on
   * the way is, or by the write would become, a git directory (see git-directory.ts), before anything is
   * created.
   */
  readonly write?: boolean;
}

interface Frame<H> {
  readonly handle: H;
  readonly name: string;
}

const joinPath = (root: string, frames: readonly Frame<unknown>[], last?: string): string => {
  const parts = frames.slice(1).map((f) => f.name);
  if (last !== undefined) parts.push(last);
  if (parts.length === 0) return root;
  return `${root === '/' ? '' : root}/${parts.join('/')}`;
};

/**
 * Resolves `target` beneath `target.root`, starting from `rootHandle` (which the walk never releases):
 * a relative link target continues from the link's directory, an absolute one only when it lies inside
 * the root (then from the root), `..` pops the stack and popping past the root is an escape; at most
 * {@link MAX_SYMLINK_HOPS} links. The kernel is never asked to follow anything.
 *
 * @throws {FileAccessError} `ALEPH_PATH_OUTSIDE_WORKSPACE` for a link or `..` leading out, naming it;
 *   `ALEPH_NOT_A_DIRECTORY`, `ALEPH_FILE_NOT_FOUND` for a missing directory on the way (unless created);
 *   `ALEPH_INVALID_PATH` after too many links.
 */
export function walkBeneath<H>(
  ops: WalkOps<H>,
  rootHandle: H,
  target: DriverFileTarget,
  options: WalkOptions,
): WalkResult<H> {
  const stack: Frame<H>[] = [{ handle: rootHandle, name: '' }];
  const pending = [...target.components];
  let hops = 0;
  let projected = false;
  const held = () => stack.slice(1).map((f) => f.handle);
  try {
    while (pending.length > 0) {
      const name = pending.shift() as string;
      const last = pending.length === 0;
      if (name === '' || name === '.') continue;
      if (name === '..') {
        if (stack.length === 1) throw escapeError(target, joinPath(target.root, stack), '..');
        ops.release((stack.pop() as Frame<H>).handle);
        continue;
      }
      const dir = (stack[stack.length - 1] as Frame<H>).handle;
      let node = ops.lookup(dir, name);
      if (node === undefined && !last && options.createParents === true && ops.mkdir !== undefined) {
        if (!projected) {
          // Nothing below a missing directory can be a link yet: the file's path is known now. Each
          // directory made below this one holds one name, so only those walked can turn into git's.
          projected = true;
          if (options.write === true) refuseGitDirectory(ops, target, stack, name);
          const rest = pending.filter((c) => c !== '' && c !== '.');
          if (!rest.includes('..'))
            target.check(joinPath(target.root, stack, [name, ...rest].join('/')), 'write', 'file');
        }
        target.check(joinPath(target.root, stack, name), 'create-directory', 'directory');
        try {
          ops.mkdir(dir, name);
        } catch (error) {
          if ((error as { code?: string }).code !== 'EEXIST') throw error;
        }
        node = ops.lookup(dir, name);
      }
      if (last && options.write === true) refuseGitDirectory(ops, target, stack, name);
      if (node === undefined) {
        if (last)
          return {
            parent: dir,
            name,
            node: undefined,
            resolved: joinPath(target.root, stack, name),
            held: held(),
          };
        throw target.error(
          'ALEPH_FILE_NOT_FOUND',
          `does not exist: ${joinPath(target.root, stack, name)} is missing`,
        );
      }
      if (node.type === 'symlink' && (!last || options.followFinal)) {
        ops.release(node.handle);
        if (++hops > MAX_SYMLINK_HOPS) {
          throw target.error(
            'ALEPH_INVALID_PATH',
            `goes through more than ${MAX_SYMLINK_HOPS} symbolic links`,
            'replace the link chain (or loop) with a direct path',
          );
        }
        const link = joinPath(target.root, stack, name);
        const text = ops.readlink(dir, name);
        if (text.startsWith('/')) {
          const root = target.root;
          if (text !== root && !text.startsWith(root === '/' ? '/' : `${root}/`)) {
            throw escapeError(target, link, text);
          }
          while (stack.length > 1) ops.release((stack.pop() as Frame<H>).handle);
          pending.unshift(...text.slice(root.length).split('/'));
        } else {
          pending.unshift(...text.split('/'));
        }
        continue;
      }
      if (last)
        return {
          parent: dir,
          name,
          node,
          resolved: joinPath(target.root, stack, name),
          held: [...held(), node.handle],
        };
      if (node.type !== 'directory') {
        ops.release(node.handle);
        throw target.error(
          'ALEPH_NOT_A_DIRECTORY',
          `has a component that is not a directory: ${joinPath(target.root, stack, name)}`,
          'pass a path whose parents are directories',
        );
      }
      stack.push({ handle: node.handle, name });
    }
    // The path ended on a directory of the stack (the root, or after `..`, `.` or a link to a directory).
    const top = stack[stack.length - 1] as Frame<H>;
    return {
      parent: undefined,
      name: undefined,
      node: { handle: top.handle, type: 'directory' },
      resolved: joinPath(target.root, stack),
      held: held(),
    };
  } catch (error) {
    for (const handle of held()) ops.release(handle);
    throw error;
  }
}

/** Releases what a walk holds (never the root handle it started from). */
export function releaseWalk<H>(ops: WalkOps<H>, result: WalkResult<H>): void {
  for (const handle of result.held) ops.release(handle);
}

/** Throws when a directory of `stack`, with `added` made in the last, is or would be a git directory. */
function refuseGitDirectory<H>(
  ops: WalkOps<H>,
  target: DriverFileTarget,
  stack: readonly Frame<H>[],
  added: string,
): void {
  const at = gitDirectoryOnTheWay(
    ops,
    stack.map((f) => f.handle),
    added,
  );
  if (at === undefined) return;
  const dir = joinPath(target.root, stack.slice(0, at + 1));
  throw target.error(
    'ALEPH_PATH_PROTECTED',
    `${at === stack.length - 1 ? 'would make or change' : 'is inside'} a git directory, ${dir} (it holds HEAD beside objects, refs or commondir): the host's git runs what such a directory's config and hooks say, so file calls may not create or change one, whatever its name`,
    'change it yourself outside the sandbox if you really mean to',
  );
}

function escapeError(target: DriverFileTarget, link: string, text: string): FileAccessError {
  return target.error(
    'ALEPH_PATH_OUTSIDE_WORKSPACE',
    text === '..'
      ? `leads out of ${target.root} (\`..\` above the root, at ${link})`
      : `leads out of ${target.root} through the symbolic link ${link} -> ${text}`,
    `pass a path that stays inside ${target.root}; a link pointing outside is never followed by file calls`,
  );
}
