/**
 * A tier 1–2 plan while its steps build it: the mounts and Landlock rules added so far, the launcher's
 * descriptors they refer to, and the filesystem view every step reads through.
 */
import type { FsView } from '../mounts/fs-view.js';
import { LaunchPlan } from '../mounts/launch-plan.js';
import type { MountOp } from '../mounts/render-mounts.js';
import type { LandlockRule } from './profile-types.js';

/** The parts of a plan its steps add to, in order (the order of mounts and rules is the plan's). */
export interface PlanDraft {
  readonly plan: LaunchPlan;
  readonly mounts: MountOp[];
  readonly landlock: LandlockRule[];
  readonly fs: FsView;
}

/** An empty plan: no mounts yet, Landlock listing `/` only. */
export function newDraft(fs: FsView): PlanDraft {
  return { plan: new LaunchPlan(), mounts: [], landlock: [{ path: '/', access: 'list' }], fs };
}

/** What `p` is (no symlink followed), as the plan sees it. */
export function exists(fs: FsView, p: string): 'dir' | 'file' | undefined {
  const st = fs.lstat(p);
  return st === undefined ? undefined : st.type === 'dir' ? 'dir' : 'file';
}
