/**
 * Tier 3's Landlock rules, its only confinement of the filesystem: the system directories, /etc without
 * its secrets, a few devices, /proc, then the grants, the workspace, the session HOME and a private
 * TMPDIR. A grant (or workspace) that would show what the other tiers hide is refused: Landlock cannot
 * hide a sub-path of a grant.
 */
import path from 'node:path';
import { DriverError, InvalidInputError, isPathWithin, type SandboxCapabilities } from '@aleph/sandbox-core';
import type { HostFacts } from '../host/host-facts.js';
import type { LaunchPlan } from '../mounts/launch-plan.js';
import { etcRules, pathKind } from './etc-rules.js';
import type { DirectInputs, LandlockRule } from './profile-types.js';

/** Device nodes a command needs; the rest of the host's /dev (disks, terminals of others) stays out. */
const DEVICES = ['/dev/null', '/dev/zero', '/dev/full', '/dev/random', '/dev/urandom', '/dev/tty'];

/** The system part: system directories, /etc entry by entry, the devices, /proc. */
export function systemRules(host: HostFacts): LandlockRule[] {
  const rules: LandlockRule[] = [];
  for (const dir of host.systemDirs) {
    if (dir.kind !== 'dir') continue;
    if (dir.path === '/etc') rules.push(...etcRules('/etc', [...host.maskedFiles, ...host.maskedDirs]));
    else rules.push({ path: dir.path, access: 'read-exec' });
  }
  for (const d of DEVICES) if (pathKind(d) !== undefined) rules.push({ path: d, access: 'device' });
  rules.push({ path: '/proc', access: 'read-exec' });
  return rules;
}

/**
 * Adds the grants, the workspace, the session HOME and the private TMPDIR to `rules`. The grants, the
 * workspace and the session HOME are opened by the launcher (`plan`), and their rules are made on those
 * descriptors: a command swapping a granted path meanwhile cannot widen what it may reach.
 *
 * @throws {InvalidInputError} for a granted path that does not exist.
 * @throws {DriverError} `ALEPH_CAPABILITY_UNSUPPORTED` for a grant or workspace covering a hidden path or
 *   inside the state directory.
 */
export function addGrantRules(
  rules: LandlockRule[],
  caps: SandboxCapabilities,
  workspace: string,
  inputs: DirectInputs,
  plan: LaunchPlan,
): void {
  const hidden = [
    ...inputs.vaultPaths,
    ...inputs.host.maskedFiles,
    ...inputs.host.maskedDirs,
    '/etc',
    path.dirname(workspace),
    inputs.stateDir,
  ];
  const ws = plan.open(workspace);
  const grant = (field: 'fsRead' | 'fsWrite', access: LandlockRule['access']) =>
    caps[field].forEach((p, i) => {
      if (pathKind(p) === undefined)
        throw new InvalidInputError(
          'ALEPH_INVALID_COMMAND',
          `capabilities.${field}[${i}]`,
          p,
          'does not exist',
          'create it first or remove it from the grant',
        );
      const shown = hidden.find((h) => isPathWithin(h, p));
      if (shown !== undefined)
        throw new DriverError(
          'ALEPH_CAPABILITY_UNSUPPORTED',
          'linux',
          `tier 3 (no namespaces) cannot hide ${shown} inside the grant ${p}; grant a narrower path`,
        );
      refuseInState(p, inputs.stateDir);
      rules.push({ path: p, access, fd: plan.open(p) });
    });
  grant('fsRead', 'read-exec');
  grant('fsWrite', 'read-write-exec');
  const inWorkspace = hidden.find((h) => h !== path.dirname(workspace) && isPathWithin(h, workspace));
  if (inWorkspace !== undefined)
    throw new DriverError(
      'ALEPH_CAPABILITY_UNSUPPORTED',
      'linux',
      `tier 3 (no namespaces) cannot hide ${inWorkspace} inside the workspace ${workspace}; use a narrower workspace`,
    );
  refuseInState(workspace, inputs.stateDir);
  rules.push({ path: workspace, access: 'read-write-exec', fd: ws });
  const home = inputs.sessionHome;
  if (home !== undefined) rules.push({ path: home, access: 'read-write-exec', fd: plan.open(home) });
  rules.push({ path: inputs.tmpDir, access: 'read-write-exec' });
}

/** The state directory holds the guard's snapshots of protected paths: nothing in it is granted. */
function refuseInState(p: string, stateDir: string): void {
  if (isPathWithin(p, stateDir))
    throw new DriverError(
      'ALEPH_CAPABILITY_UNSUPPORTED',
      'linux',
      `tier 3 (no namespaces) cannot grant ${p}: it lies in the launcher's state directory ${stateDir}, which holds the snapshots of protected paths; grant a path outside it`,
    );
}
