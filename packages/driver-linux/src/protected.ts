import { lstatSync, type Stats } from 'node:fs';
import path from 'node:path';
import { InvalidInputError } from '@aleph/sandbox-core';
import type { MountOp } from './mounts.js';

/** A stub created on the host so a missing protected path exists (empty, read-only inside). */
export interface Stub {
  readonly path: string;
  readonly kind: 'dir' | 'file';
}

/** What protecting sub-paths of the writable roots takes. */
export interface ProtectionPlan {
  readonly mounts: MountOp[];
  readonly stubs: Stub[];
  /** In words, for the profile. */
  readonly summary: string[];
}

const FILE_STUBS = new Set(['config']);

function lstat(p: string): Stats | undefined {
  try {
    return lstatSync(p);
  } catch {
    return undefined;
  }
}

/**
 * Plans the read-only protection of `relative` paths (`.git/hooks`, `.aleph`, …) inside each writable root:
 * - an existing protected path is bind-mounted read-only onto itself, and every directory between the
 *   root and it is bind-mounted onto itself, so none of them can be renamed or removed (a mount point
 *   cannot be), which would otherwise let a command swap `.git` for its own copy;
 * - a missing one gets an empty stub created on the host and mounted read-only, so it cannot be created;
 *   except under a missing `.git`: a repository the command creates itself is its own;
 * - when `.git` is a file (worktrees, submodules) that file is protected instead;
 * - a protected path or one of its parents that is a symlink is refused: it could be swapped.
 *
 * @throws {InvalidInputError} `ALEPH_INVALID_COMMAND` for a symlinked protected path.
 */
export function planProtectedPaths(roots: readonly string[], relative: readonly string[]): ProtectionPlan {
  const mounts: MountOp[] = [];
  const stubs: Stub[] = [];
  const summary: string[] = [];
  const selfBound = new Set<string>();
  for (const root of roots) {
    const rootStat = lstat(root);
    if (rootStat === undefined || !rootStat.isDirectory()) continue;
    for (const rel of relative) {
      const parts = rel.split('/').filter(Boolean);
      let current = root;
      for (let i = 0; i < parts.length; i++) {
        current = path.join(current, parts[i] as string);
        const last = i === parts.length - 1;
        const st = lstat(current);
        if (st?.isSymbolicLink()) {
          throw new InvalidInputError(
            'ALEPH_INVALID_COMMAND',
            'protected path',
            current,
            'is a symlink, so the sandbox cannot keep it read-only',
            'replace the symlink with a real directory or file, or remove it from the protected paths',
          );
        }
        if (st === undefined) {
          if (!last && parts[0] === '.git') {
            summary.push(`${current}: no repository here; ${path.join(root, rel)} not protected`);
            break;
          }
          const kind = last && FILE_STUBS.has(parts[i] as string) ? 'file' : 'dir';
          stubs.push({ path: current, kind });
          if (last) {
            mounts.push({ op: 'ro-bind', src: current, dest: current });
            summary.push(`${current}: missing, empty read-only stub`);
          } else if (!selfBound.has(current)) {
            selfBound.add(current);
            mounts.push({ op: 'bind', src: current, dest: current });
          }
          continue;
        }
        if (last || !st.isDirectory()) {
          mounts.push({ op: 'ro-bind', src: current, dest: current });
          summary.push(`${current}: read-only`);
          break;
        }
        if (!selfBound.has(current)) {
          selfBound.add(current);
          mounts.push({ op: 'bind', src: current, dest: current });
        }
      }
    }
  }
  return { mounts, stubs, summary };
}
