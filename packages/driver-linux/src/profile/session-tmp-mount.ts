/**
 * A session's scratch space as the sandbox's `/tmp` (tiers 1–2): the host directory kept for the session
 * (`run/session-tmp.ts`) bound from the launcher's descriptor in place of the private tmpfs, so what one
 * command leaves in `/tmp` the session's next command finds. It is a user path like the workspace: opened
 * without following links, idmapped on a root host so it shows as the run's own uid. It stays executable
 * (agents download a script to /tmp and run it); nothing in it reaches another host user (it lies in the
 * 0700 state directory) and it is removed with the session. A grant of the host's `/tmp` still wins over
 * it (grants are added after it).
 *
 * A mount beneath `/tmp` (a workspace or grant in the host's /tmp) needs its mount point in that
 * directory: the plan names them (`sessionTmpMountPoints`), and the run makes them on descriptors before
 * the launcher starts (`SessionTmps.ensure`).
 */
import type { MountOp } from '../mounts/render-mounts.js';
import type { PlanDraft } from './plan-draft.js';

/** A mount point the session's `/tmp` must hold: its path relative to `/tmp`, a file or a directory. */
export interface SessionTmpMountPoint {
  readonly path: string;
  readonly file: boolean;
}

/** Binds `sessionTmp` at `/tmp`, over the tmpfs `addSystemMounts` put there; none without one. */
export function addSessionTmp(draft: PlanDraft, sessionTmp: string | undefined): void {
  if (sessionTmp === undefined) return;
  draft.mounts.push({
    op: 'bind',
    src: sessionTmp,
    dest: '/tmp',
    fd: draft.plan.open(sessionTmp),
    scratch: true,
  });
}

const within = (p: string, dir: string) => p.startsWith(`${dir}/`);

/**
 * The mount points `mounts` need in the session's `/tmp`: each mount beneath `/tmp` that no other mount
 * beneath `/tmp` holds (those inside the workspace land in the workspace), parents first.
 */
export function sessionTmpMountPoints(mounts: readonly MountOp[]): SessionTmpMountPoint[] {
  const under = mounts.filter((m) => within(m.dest, '/tmp') && m.op !== 'symlink');
  const points = new Map<string, boolean>();
  for (const m of under) {
    if (under.some((o) => o !== m && within(m.dest, o.dest) && o.op !== 'mask-file')) continue;
    const file = m.op === 'mask-file' || ((m.op === 'bind' || m.op === 'ro-bind') && m.kind === 'file');
    points.set(m.dest.slice('/tmp/'.length), file);
  }
  return [...points]
    .sort(([a], [b]) => a.split('/').length - b.split('/').length || a.localeCompare(b))
    .map(([path, file]) => ({ path, file }));
}
