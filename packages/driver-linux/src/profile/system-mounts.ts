/**
 * The system part of a tier 1–2 plan: the host's system directories read-only (usr-merge symlinks as
 * symlinks), /etc's secrets masked, fresh /dev and /proc, private /tmp and /dev/shm, and the helper.
 */
import type { HostFacts } from '../host/host-facts.js';
import { INNER_HELPER } from '../options.js';
import { tmpfsSizeBytes } from './limits.js';
import type { PlanDraft } from './plan-draft.js';

/** Adds the system mounts and their Landlock rules. */
export function addSystemMounts(
  draft: PlanDraft,
  host: HostFacts,
  maxMemoryMb: number | undefined,
  inputs: {
    readonly tmpfsSizeMb?: number | undefined;
    readonly helperPath: string;
    readonly hostProc?: boolean | undefined;
  },
): void {
  const { mounts, landlock } = draft;
  // System directories: read-only and executable; usr-merge symlinks recreated as symlinks.
  for (const dir of host.systemDirs) {
    if (dir.kind === 'dir') {
      mounts.push({ op: 'ro-bind', src: dir.path, dest: dir.path });
      landlock.push({ path: dir.path, access: 'read-exec' });
    } else {
      mounts.push({ op: 'symlink', target: dir.target, dest: dir.path });
    }
  }
  for (const f of host.maskedFiles) mounts.push({ op: 'mask-file', dest: f });
  for (const d of host.maskedDirs)
    mounts.push({ op: 'tmpfs', dest: d, mode: '0755', readOnly: true, hide: true });
  mounts.push({ op: 'dev', dest: '/dev' });
  // A fresh procfs, or (where the kernel refuses one) this host's, bound read-only with what masks it.
  if (inputs.hostProc === true) mounts.push({ op: 'ro-bind', src: '/proc', dest: '/proc' });
  else mounts.push({ op: 'proc', dest: '/proc' });
  const tmpfsBytes = tmpfsSizeBytes(maxMemoryMb, inputs.tmpfsSizeMb);
  mounts.push({ op: 'tmpfs', dest: '/tmp', mode: '1777', sizeBytes: tmpfsBytes });
  mounts.push({ op: 'tmpfs', dest: '/dev/shm', mode: '1777', sizeBytes: tmpfsBytes });
  landlock.push({ path: '/dev', access: 'device' }, { path: '/proc', access: 'read-exec' });
  landlock.push({ path: '/tmp', access: 'read-write-exec' }, { path: '/dev/shm', access: 'read-write-exec' });
  mounts.push({ op: 'ro-bind', src: inputs.helperPath, dest: INNER_HELPER });
  landlock.push({ path: INNER_HELPER, access: 'read-exec' });
}
