/**
 * What a tier 1–2 plan hides even where a grant shows it: other sessions' workspaces (and, on a root
 * host, the directories above them the sandbox uid could not pass through), and the vault paths.
 */
import path from 'node:path';
import { InvalidInputError, isPathWithin, type SandboxCapabilities } from '@aleph/sandbox-core';
import type { FsView } from '../mounts/fs-view.js';
import type { MountOp } from '../mounts/render-mounts.js';
import { exists, type PlanDraft } from './plan-draft.js';
import type { ProfileInputs } from './profile-types.js';

/** Adds the hiding mounts; returns the vault paths hidden (see `pinHiddenAncestors` for what keeps them there). */
export function hidePaths(
  draft: PlanDraft,
  caps: SandboxCapabilities,
  workspace: string,
  inputs: ProfileInputs,
  privileged: boolean,
): string[] {
  const visible = [...caps.fsRead, ...caps.fsWrite, ...inputs.host.systemDirs.map((d) => d.path)];
  hideOtherSessions(draft, visible, workspace, inputs, privileged);
  return hideVaults(draft, visible, workspace, inputs.vaultPaths);
}

/**
 * Other sessions' workspaces stay hidden even when a grant covers the workspace root: a fresh tmpfs
 * replaces it. On a root host the grant may also show real directories above it that root made 0700
 * (--allow-write ~ over ~/.aleph/workspaces): those the sandbox uid could not pass through are
 * replaced too, up to the grant, so it reaches its workspace and sees nothing it could not see before.
 */
function hideOtherSessions(
  draft: PlanDraft,
  visible: readonly string[],
  workspace: string,
  inputs: ProfileInputs,
  privileged: boolean,
): void {
  const workspaceRoot = path.dirname(workspace);
  if (!visible.some((v) => isPathWithin(workspaceRoot, v))) return;
  const uid = inputs.sandboxUid ?? inputs.uidRange[0];
  const gid = inputs.sandboxGid ?? inputs.uidRange[0];
  let hidden = workspaceRoot;
  for (
    let dir = path.dirname(workspaceRoot);
    privileged &&
    dir !== path.dirname(dir) &&
    visible.some((v) => v !== dir && isPathWithin(dir, v)) &&
    !passable(draft.fs, dir, uid, gid);
    dir = path.dirname(dir)
  ) {
    hidden = dir;
  }
  draft.mounts.push({ op: 'tmpfs', dest: hidden, mode: '0755', hide: true });
}

/** Vault paths are never visible: an empty read-only tmpfs over a directory, an empty file over a file. */
function hideVaults(
  draft: PlanDraft,
  visible: readonly string[],
  workspace: string,
  vaultPaths: readonly string[],
): string[] {
  const vaultHidden: string[] = [];
  for (const vault of vaultPaths) {
    if (!visible.some((v) => isPathWithin(vault, v)) && !isPathWithin(vault, workspace)) continue;
    const kind = exists(draft.fs, vault);
    if (kind === 'dir')
      draft.mounts.push({ op: 'tmpfs', dest: vault, mode: '0700', readOnly: true, hide: true });
    else if (kind === 'file') draft.mounts.push({ op: 'mask-file', dest: vault });
    else continue;
    vaultHidden.push(vault);
  }
  return vaultHidden;
}

/** Whether `uid`/`gid` may pass through directory `dir` (its execute bit for them). */
function passable(fs: FsView, dir: string, uid: number, gid: number): boolean {
  const st = fs.lstat(dir);
  if (st === undefined) return true;
  const bit = st.uid === uid ? 0o100 : st.gid === gid ? 0o010 : 0o001;
  return (st.mode & bit) !== 0;
}

/**
 * The hiding mounts hide a path by its name: a command that could rename one of its ancestors (`~` or
 * `~/.aleph` under a write grant of `/home`) would move what is hidden out from under the mount, and a
 * later run granted the new name would read it. So each directory between a writable mount and a hidden
 * path is mounted onto itself, from a descriptor the launcher opens beneath the one above it without
 * following symlinks (as the directories on the way to protected paths are): a mount point cannot be
 * renamed or removed (`EBUSY`). Call it once every other filesystem mount is in the draft: a directory
 * already a mount point is left as it is, and nothing beneath a read-only mount or a hiding one needs it.
 *
 * @throws {InvalidInputError} `ALEPH_INVALID_COMMAND` for a symlink on the way, in a writable mount: it
 *   cannot be a mount point, and renaming it would leave the next run hiding a name that leads nowhere.
 * @returns the directories mounted onto themselves.
 */
export function pinHiddenAncestors(draft: PlanDraft): string[] {
  const pinned: string[] = [];
  const hidden = draft.mounts.filter((m) => (m.op === 'tmpfs' && m.hide === true) || m.op === 'mask-file');
  for (const h of hidden) {
    const parts = h.dest.split('/').filter(Boolean);
    for (let i = 1; i < parts.length; i++) {
      const dir = `/${parts.slice(0, i).join('/')}`;
      const holder = deepestMount(draft.mounts, dir);
      if (holder === undefined || holder.dest === dir) continue;
      // Read-only or hidden from here down: nothing beneath can be renamed, or seen.
      if (sealed(holder)) break;
      // The sandbox's own tmpfs: renaming there changes nothing on the host.
      if (!writableUserMount(holder)) continue;
      const st = draft.fs.lstat(dir);
      if (st?.type === 'symlink') throw symlinkOnTheWay(dir, h.dest);
      if (st?.type !== 'dir') break;
      const fd = draft.plan.openIn(path.dirname(dir), path.basename(dir), 'way');
      draft.mounts.push({ op: 'bind', src: dir, dest: dir, fd });
      pinned.push(dir);
    }
  }
  return pinned;
}

function symlinkOnTheWay(link: string, hidden: string): InvalidInputError {
  return new InvalidInputError(
    'ALEPH_INVALID_COMMAND',
    'hidden path',
    link,
    `is a symlink on the way to ${hidden}, inside a writable grant: a command could rename it and the next run would no longer hide what it leads to`,
    'grant a path that does not hold it, or replace the symlink with the directory it names',
  );
}

/** The deepest mount holding `p` (or at `p`). */
function deepestMount(mounts: readonly MountOp[], p: string): MountOp | undefined {
  let best: MountOp | undefined;
  for (const m of mounts)
    if (isPathWithin(p, m.dest) && (best === undefined || m.dest.length > best.dest.length)) best = m;
  return best;
}

/** A mount nothing beneath which can be renamed or seen. */
function sealed(m: MountOp): boolean {
  return (
    m.op === 'ro-bind' ||
    m.op === 'mask-file' ||
    (m.op === 'tmpfs' && (m.hide === true || m.readOnly === true))
  );
}

/** A user path mounted read-write at its own place (a write grant, the workspace, a way directory). */
function writableUserMount(m: MountOp): boolean {
  return m.op === 'bind' && m.fd !== undefined && m.src === m.dest && m.scratch !== true;
}
