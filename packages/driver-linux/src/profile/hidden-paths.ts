/**
 * What a tier 1–2 plan hides even where a grant shows it: other sessions' workspaces (and, on a root
 * host, the directories above them the sandbox uid could not pass through), and the vault paths.
 */
import path from 'node:path';
import { isPathWithin, type SandboxCapabilities } from '@aleph/sandbox-core';
import type { FsView } from '../mounts/fs-view.js';
import { exists, type PlanDraft } from './plan-draft.js';
import type { ProfileInputs } from './profile-types.js';

/** Adds the hiding mounts; returns the vault paths hidden. */
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
