import path from 'node:path';
import { InvalidInputError } from '@aleph/sandbox-core';
import { type FsView, liveFs } from './fs-view.js';
import type { LaunchPlan } from './launch-plan.js';
import type { MountOp } from './mounts.js';

/** A protected path that is missing now: the launcher creates it as an empty stub for the run. */
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

/** Protected names that are files when they exist (a stub of them is an empty file). */
export const FILE_NAMES = new Set([
  'config',
  'config.worktree',
  'commondir',
  '.mcp.json',
  '.envrc',
  '.npmrc',
  '.yarnrc',
  '.yarnrc.yml',
  '.pypirc',
  '.gitconfig',
  '.bashrc',
  '.bash_profile',
  '.bash_login',
  '.bash_logout',
  '.profile',
  '.zshrc',
  '.zshenv',
  '.zprofile',
  '.zlogin',
  '.zlogout',
  '.inputrc',
  'pip.conf',
]);

/**
 * Plans the read-only protection of `relative` paths (`.git/hooks`, `.aleph`, …) inside each writable root:
 * - an existing protected path is mounted read-only onto itself, and every directory between the root
 *   and it is mounted onto itself, so none of them can be renamed or removed (a mount point cannot be),
 *   which would otherwise let a command swap `.git` for its own copy;
 * - a missing one gets an empty stub for the run, mounted read-only, so it cannot be created; the
 *   launcher removes the stub when the last run using the root ends (or, after a killed run, when the
 *   next one starts). Under a missing `.git` nothing is stubbed: a repository the command creates is its own;
 * - when `.git` is a file (worktrees, submodules) that file is protected instead;
 * - a protected path or one of its parents that is a symlink is refused: it could be swapped.
 * Every path is opened by the launcher beneath its root without following symlinks.
 *
 * @throws {InvalidInputError} `ALEPH_INVALID_COMMAND` for a symlinked protected path.
 */
export function planProtectedPaths(
  plan: LaunchPlan,
  roots: readonly string[],
  relative: readonly string[],
  fs: FsView = liveFs,
): ProtectionPlan {
  const mounts: MountOp[] = [];
  const stubs: Stub[] = [];
  const summary: string[] = [];
  const selfBound = new Set<string>();
  for (const root of roots) {
    const rootStat = fs.lstat(root);
    if (rootStat?.type !== 'dir') continue;
    plan.open(root);
    for (const rel of relative) {
      const parts = rel.split('/').filter(Boolean);
      let current = root;
      for (let i = 0; i < parts.length; i++) {
        const parent = current;
        const part = parts[i] as string;
        current = path.join(current, part);
        const last = i === parts.length - 1;
        const st = fs.lstat(current);
        if (st?.type === 'symlink') {
          throw new InvalidInputError(
            'ALEPH_INVALID_COMMAND',
            'protected path',
            current,
            'is a symlink, so the sandbox cannot keep it read-only',
            'replace the symlink with a real directory or file, or remove it from the protected paths',
          );
        }
        if (st === undefined) {
          if (!last && parts[0] === '.git' && i === 0) {
            summary.push(`${current}: no repository here; ${path.join(root, rel)} not protected`);
            break;
          }
          const kind = last && FILE_NAMES.has(part) ? 'file' : 'dir';
          // git reads commondir as a path: its stub holds "." (the repository itself), not nothing.
          const fd = plan.openIn(parent, part, part === 'commondir' ? 'dot' : kind);
          if (!stubs.some((s) => s.path === current)) stubs.push({ path: current, kind });
          if (last) {
            mounts.push({ op: 'ro-bind', src: current, dest: current, fd, kind });
            summary.push(`${current}: missing, an empty read-only stub for the run`);
          } else if (!selfBound.has(current)) {
            selfBound.add(current);
            mounts.push({ op: 'bind', src: current, dest: current, fd });
          }
          continue;
        }
        const fd = plan.openIn(parent, part, 'need');
        if (last || st.type !== 'dir') {
          mounts.push({
            op: 'ro-bind',
            src: current,
            dest: current,
            fd,
            kind: st.type === 'dir' ? 'dir' : 'file',
          });
          summary.push(`${current}: read-only`);
          break;
        }
        if (!selfBound.has(current)) {
          selfBound.add(current);
          mounts.push({ op: 'bind', src: current, dest: current, fd });
        }
      }
    }
  }
  return { mounts, stubs, summary };
}
