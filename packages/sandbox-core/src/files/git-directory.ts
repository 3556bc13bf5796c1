// What keeps a file call from making or changing a git directory under any name. Git takes a directory
// holding `HEAD` together with `objects/` and `refs/` (or a `commondir`) as a repository, `.git` or not,
// and the host's git then runs what its `config` and `hooks/` say (a pager, an fsmonitor, a hook). A
// sandboxed command that plants one is caught by the after-run check; a file call runs on the host side
// with no check after it, so it is refused before it writes.
import type { WalkOps } from './walk.js';

/** Beside `HEAD`, any one of these makes a directory a git directory here (git wants two, or commondir). */
const BESIDE_HEAD = ['objects', 'refs', 'commondir'] as const;

/**
 * Whether directory `dir` holds, or with `added` (a name about to be made in it) would hold, what git
 * takes for a repository: `HEAD` and one of `objects`, `refs` or `commondir`, of any type. It asks for
 * more than git (one of the three rather than two, any type rather than a valid `HEAD` and directories),
 * so that no order of writes can complete one.
 */
export function isGitDirectoryLike<H>(ops: WalkOps<H>, dir: H, added?: string): boolean {
  const has = (name: string): boolean => {
    if (name === added) return true;
    const node = ops.lookup(dir, name);
    if (node === undefined) return false;
    ops.release(node.handle);
    return true;
  };
  return has('HEAD') && BESIDE_HEAD.some(has);
}

/**
 * The first of `dirs` (the directories a write goes through, from its root down to the one that will
 * hold `added`) that is or would become a git directory, as its index; `undefined` when none.
 */
export function gitDirectoryOnTheWay<H>(
  ops: WalkOps<H>,
  dirs: readonly H[],
  added: string,
): number | undefined {
  for (let i = 0; i < dirs.length; i++) {
    if (isGitDirectoryLike(ops, dirs[i] as H, i === dirs.length - 1 ? added : undefined)) return i;
  }
  return undefined;
}
