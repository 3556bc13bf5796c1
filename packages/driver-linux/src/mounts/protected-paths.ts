/**
 * Protected paths (`.git/hooks`, `.aleph`, shell startup files in a home, …) inside writable roots: kept
 * read-only with mounts when they are there, checked after the run when they are not (tiers 1–2,
 * `planProtectedPaths`), or checked by the launcher after the run (tier 3, `planCheckedPaths`); and the
 * home directories a writable root holds.
 */
import path from 'node:path';
import { InvalidInputError, isPathWithin, protectedEntryKind } from '@aleph/sandbox-core';
import { type FsView, liveFs } from './fs-view.js';
import type { LaunchPlan } from './launch-plan.js';
import type { MountOp } from './render-mounts.js';

/** What protecting sub-paths of the writable roots takes. */
export interface ProtectionPlan {
  readonly mounts: MountOp[];
  /**
   * The protected paths (absolute): read-only during the run when the launcher finds them there, else
   * checked after it (set aside when they appeared). Nothing is ever made in their place.
   */
  readonly paths: string[];
  /** In words, for the profile. */
  readonly summary: string[];
}

function symlinked(p: string): InvalidInputError {
  return new InvalidInputError(
    'ALEPH_INVALID_COMMAND',
    'protected path',
    p,
    'is a symlink, so the sandbox cannot keep it read-only',
    'replace the symlink with a real directory or file, or remove it from the protected paths',
  );
}

/** The home directories (real paths) that lie inside one of `roots`: `home`, `/root`, `/home/*`. */
export function homesWithin(roots: readonly string[], home: string, fs: FsView = liveFs): string[] {
  const candidates = new Set<string>();
  const add = (p: string) => {
    const r = fs.realpath(p);
    if (r !== undefined && roots.some((root) => isPathWithin(r, root)) && fs.lstat(r)?.type === 'dir')
      candidates.add(r);
  };
  add(home);
  if (roots.some((root) => isPathWithin('/root', root))) add('/root');
  if (roots.some((root) => isPathWithin('/home', root))) {
    for (const name of fs.readdir('/home') ?? []) add(path.join('/home', name));
  }
  return [...candidates];
}

/**
 * Plans the protection of `relative` paths (`.git/hooks`, `.aleph`, …) inside each writable root. The
 * launcher decides from what it opens when the command starts (native/linux/launcher/nodes.c), not from
 * this plan:
 * - a protected path that is there is mounted read-only onto itself, and every directory between the root
 *   and it is mounted onto itself, so none of them can be renamed or removed (a mount point cannot be),
 *   which would otherwise let a command swap `.git` for its own copy; one of those that is not a directory
 *   (a `.git` file of a worktree or submodule) is mounted read-only itself;
 * - a missing one gets no mount and nothing in its place (no placeholder the command's tools trip on): the
 *   launcher sets it aside after the run if it exists then;
 * - a protected path or one of its parents that is a symlink now is refused: it could be swapped.
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
  const paths: string[] = [];
  const summary: string[] = [];
  const selfBound = new Set<string>();
  for (const root of roots) {
    if (fs.lstat(root)?.type !== 'dir') continue;
    plan.open(root);
    for (const rel of relative) {
      const parts = rel.split('/').filter(Boolean);
      let current = root;
      for (let i = 0; i < parts.length; i++) {
        const parent = current;
        const part = parts[i] as string;
        current = path.join(current, part);
        const last = i === parts.length - 1;
        if (fs.lstat(current)?.type === 'symlink') throw symlinked(current);
        const fd = plan.openIn(parent, part, last ? 'ro' : 'way');
        if (last) {
          const kind = protectedEntryKind(rel);
          mounts.push({ op: 'ro-bind', src: current, dest: current, fd, kind });
          paths.push(current);
        } else if (!selfBound.has(current)) {
          selfBound.add(current);
          mounts.push({ op: 'bind', src: current, dest: current, fd });
        }
      }
    }
    summary.push(
      `${root}: ${relative.join(', ')} are read-only during the run where they exist when it starts; where they do not, nothing is made in their place and what appears there is set aside after the run`,
    );
  }
  return { mounts, paths, summary };
}

/** Tier 3's plan for protected paths: the launcher's arguments, and in words. */
export interface CheckPlan {
  /** `--guard NAME REL` for each protected path of each root (NAME: the root opened in the plan). */
  readonly args: string[];
  /** The protected paths, absolute. */
  readonly paths: string[];
  readonly summary: string[];
}

/**
 * Plans tier 3's check of `relative` paths inside each root (no mount namespace, so nothing can be
 * read-only): the launcher snapshots them before the run and, after it, renames aside what the command
 * created or changed there and puts the originals back (native/linux/after-run/guard.c). When `.git` is a file
 * (worktrees, submodules) that file is checked instead of what it names, as `planProtectedPaths` protects
 * it; a protected path or a directory on the way that is a symlink is refused, as there.
 *
 * @throws {InvalidInputError} `ALEPH_INVALID_COMMAND` for a symlinked protected path.
 */
export function planCheckedPaths(
  plan: LaunchPlan,
  roots: readonly string[],
  relative: readonly string[],
  fs: FsView = liveFs,
): CheckPlan {
  const args: string[] = [];
  const paths: string[] = [];
  const summary: string[] = [];
  for (const root of roots) {
    if (fs.lstat(root)?.type !== 'dir') continue;
    const name = plan.open(root);
    const gitFile = fs.lstat(path.join(root, '.git'))?.type === 'file';
    const checked = new Set<string>();
    for (const rel of relative) {
      const use = gitFile && (rel === '.git' || rel.startsWith('.git/')) ? '.git' : rel;
      let current = root;
      for (const part of use.split('/').filter(Boolean)) {
        current = path.join(current, part);
        const st = fs.lstat(current);
        if (st?.type === 'symlink') throw symlinked(current);
        if (st?.type !== 'dir') break;
      }
      checked.add(use);
    }
    for (const rel of checked) {
      args.push('--guard', name, rel);
      paths.push(path.join(root, rel));
    }
    summary.push(
      `${root}: ${[...checked].join(', ')} are checked after the run: what the command created or changed there is moved to the session's quarantine (~/.aleph/quarantine) and the original put back from a snapshot taken before it`,
    );
  }
  return { args, paths, summary };
}
