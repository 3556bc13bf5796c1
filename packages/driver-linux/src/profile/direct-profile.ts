import { lstatSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { DriverError, InvalidInputError, isPathWithin, type SandboxCapabilities } from '@aleph/sandbox-core';
import { LaunchPlan } from '../mounts/launch-plan.js';
import { homesWithin, planCheckedPaths } from '../mounts/protected-paths.js';
import { buildSeccompProgram, type SeccompNetworkMode } from '../seccomp/seccomp-program.js';
import type { LandlockRule, LinuxProfile, ProfileInputs } from './profile-types.js';

/** Device nodes a command needs; the rest of the host's /dev (disks, terminals of others) stays out. */
const DEVICES = ['/dev/null', '/dev/zero', '/dev/full', '/dev/random', '/dev/urandom', '/dev/tty'];

/** Sensitive entries under /etc, left out of the grant (with the directories that hold them). */
const ETC_SECRET = /^(shadow|gshadow|sudoers|opasswd|ssh_host_.*_key|private|\.pwd\.lock|master\.passwd)/;

/** System V IPC: no IPC namespace keeps the host's segments, semaphores and queues apart. */
const SYSV_IPC = [
  'shmget',
  'shmat',
  'shmctl',
  'shmdt',
  'semget',
  'semop',
  'semctl',
  'semtimedop',
  'msgget',
  'msgsnd',
  'msgrcv',
  'msgctl',
] as const;

/** In the helper arguments: the driver puts the loopback proxy's port there at run time. */
export const PROXY_PORT_ARG = '@PROXY_PORT';

function kind(p: string): 'dir' | 'file' | 'symlink' | undefined {
  try {
    const st = lstatSync(p);
    return st.isSymbolicLink() ? 'symlink' : st.isDirectory() ? 'dir' : 'file';
  } catch {
    return undefined;
  }
}

/**
 * Read rules for `dir`, entry by entry, leaving out the sensitive ones and descending only into the
 * directories that hold one (`/etc/ssl` for `ssl/private`, `/etc/ssh` for the host keys), so the rest of
 * each directory is granted whole.
 */
export function etcRules(dir: string, secrets: readonly string[]): LandlockRule[] {
  const rules: LandlockRule[] = [];
  let names: string[];
  try {
    names = readdirSync(dir).sort();
  } catch {
    return rules;
  }
  for (const name of names) {
    const full = path.join(dir, name);
    if (ETC_SECRET.test(name) || secrets.includes(full)) continue;
    if (secrets.some((s) => isPathWithin(s, full)) && kind(full) === 'dir')
      rules.push(...etcRules(full, secrets));
    else rules.push({ path: full, access: 'read-exec' });
  }
  return rules;
}

/** Tier 3 inputs beyond the usual ones. */
export interface DirectInputs extends ProfileInputs {
  readonly landlockAbi: number;
  /** The session's private TMPDIR on the host. */
  readonly tmpDir: string;
}

/**
 * The tier 3 plan: no namespaces and no mounts. The helper (`--direct`) confines the command with Landlock
 * alone: the system directories read-only, /etc entry by entry without its secrets, a few devices, /proc,
 * the grants, the workspace, the session HOME and a private TMPDIR; seccomp keeps its denylist and gets a
 * socket gate for a host network (see `SeccompNetworkMode`). Grants (and a workspace) that would show what
 * the other tiers hide (vault paths, other sessions, /etc's secrets) are refused: Landlock cannot hide a
 * sub-path of a grant; so is one inside the state directory, which holds the launcher's snapshots. The
 * protected paths cannot be read-only: the launcher checks them after the run (`planCheckedPaths`), and
 * sweeps the writable roots for repositories the command created or changed, as in the other tiers.
 *
 * @throws {InvalidInputError} for a granted path that does not exist, or a symlinked protected path.
 * @throws {DriverError} `ALEPH_CAPABILITY_UNSUPPORTED` for a grant or workspace covering a hidden path or inside the state directory, or allowHosts without Landlock ABI 4.
 */
export function buildDirectProfile(
  caps: SandboxCapabilities,
  cwd: string,
  workspace: string,
  inputs: DirectInputs,
): LinuxProfile {
  const { host } = inputs;
  const rules: LandlockRule[] = [];
  for (const dir of host.systemDirs) {
    if (dir.kind !== 'dir') continue;
    if (dir.path === '/etc') rules.push(...etcRules('/etc', [...host.maskedFiles, ...host.maskedDirs]));
    else rules.push({ path: dir.path, access: 'read-exec' });
  }
  for (const d of DEVICES) if (kind(d) !== undefined) rules.push({ path: d, access: 'device' });
  rules.push({ path: '/proc', access: 'read-exec' });

  const hidden = [
    ...inputs.vaultPaths,
    ...host.maskedFiles,
    ...host.maskedDirs,
    '/etc',
    path.dirname(workspace),
    inputs.stateDir,
  ];
  const inState = (p: string) => {
    if (isPathWithin(p, inputs.stateDir))
      throw new DriverError(
        'ALEPH_CAPABILITY_UNSUPPORTED',
        'linux',
        `tier 3 (no namespaces) cannot grant ${p}: it lies in the launcher's state directory ${inputs.stateDir}, which holds the snapshots of protected paths; grant a path outside it`,
      );
  };
  const grant = (field: 'fsRead' | 'fsWrite', access: LandlockRule['access']) =>
    caps[field].forEach((p, i) => {
      if (kind(p) === undefined)
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
      inState(p);
      rules.push({ path: p, access });
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
  inState(workspace);
  rules.push({ path: workspace, access: 'read-write-exec' });
  if (inputs.sessionHome !== undefined) rules.push({ path: inputs.sessionHome, access: 'read-write-exec' });
  rules.push({ path: inputs.tmpDir, access: 'read-write-exec' });

  const net = caps.network;
  if (net.kind === 'allowHosts' && inputs.landlockAbi < 4)
    throw new DriverError(
      'ALEPH_CAPABILITY_UNSUPPORTED',
      'linux',
      `allowHosts in tier 3 (no network namespace) needs Landlock ABI 4 to limit TCP connects to the proxy; this kernel has ABI ${inputs.landlockAbi}`,
    );
  const network: SeccompNetworkMode =
    net.kind === 'none' ? 'pairs-only' : net.kind === 'allowHosts' ? 'inet-stream' : 'host-inet';
  const seccomp = buildSeccompProgram({
    arch: inputs.arch,
    network,
    denySpawn: !caps.spawnSubprocess,
    extraDenied: SYSV_IPC,
  });

  const uid = host.isRoot ? inputs.sandboxUid : undefined;
  const identity: LinuxProfile['identity'] =
    uid === undefined
      ? { mode: 'keep-uid', uid: host.uid, capabilities: 'none' }
      : { mode: 'drop-to-uid', uid, gid: inputs.sandboxGid ?? uid, range: null };
  const rlimits: Record<string, number> = { CORE: 0 };
  if (caps.maxMemoryMb !== undefined) rlimits.AS = caps.maxMemoryMb * 1024 * 1024;

  const helper: string[] = [];
  if (uid !== undefined) helper.push('--uid', String(uid), '--gid', String(inputs.sandboxGid ?? uid));
  for (const [name, value] of Object.entries(rlimits)) helper.push('--rlimit', `${name}=${value}`);
  helper.push('--landlock', 'required');
  const flag = {
    'read-exec': '--ll-ro',
    'read-write-exec': '--ll-rw',
    device: '--ll-dev',
    list: '--ll-list',
  };
  for (const rule of rules) helper.push(flag[rule.access], rule.path);
  // No TCP bind at all; connects only to the proxy's port (allowHosts) or nowhere (none).
  const tcp = net.kind === 'allowAll' ? null : { connectPorts: net.kind === 'allowHosts' ? [0] : [] };
  if (tcp !== null) {
    helper.push('--ll-net', 'on');
    if (net.kind === 'allowHosts') helper.push('--ll-connect', PROXY_PORT_ARG);
  }
  helper.push('--ll-scope', 'on', '--chdir', cwd, '--seccomp-fd', '3', '--env-fd', '4');

  // Protected paths cannot be read-only without mounts: the launcher checks them after the run, in the
  // writable roots and the home directories they hold, and sweeps the roots for repositories.
  const plan = new LaunchPlan();
  const writableRoots = [workspace, ...caps.fsWrite.filter((p) => kind(p) === 'dir')];
  const checked = planCheckedPaths(plan, writableRoots, inputs.protectedPaths);
  const homeChecked = planCheckedPaths(
    plan,
    homesWithin(writableRoots, host.home),
    inputs.homeProtectedPaths,
  );
  const sweeps = writableRoots.flatMap((root) => ['--git-sweep', plan.open(root)]);
  const launch = [
    '--state',
    inputs.stateDir,
    '--reap',
    ...plan.args,
    ...sweeps,
    ...checked.args,
    ...homeChecked.args,
  ];

  const notEnforced = inputs.notEnforced ?? [];
  const summary = [
    'tier: direct',
    ...notEnforced.map((g) => `not enforced: ${g}`),
    `identity: ${identity.mode === 'keep-uid' ? `uid ${identity.uid} kept, every capability dropped (bounding set included), no_new_privs` : `switches to uid ${uid} with no capabilities`}`,
    'namespaces: none; new session; the launcher kills whatever the command leaves behind',
    `landlock (required): ${rules.map((r) => `${r.access} ${r.path}`).join('; ')}${tcp ? `; TCP bind refused; TCP connect ${net.kind === 'allowHosts' ? "only to the proxy's port" : 'refused'}` : ''}; abstract unix sockets and signals scoped`,
    ...seccomp.rules.map((r) => `seccomp: ${r}`),
    `limits: ${Object.entries(rlimits)
      .map(([k, v]) => `RLIMIT_${k}=${v}`)
      .join(', ')}; processes ≤ ${inputs.maxPids}`,
    ...checked.summary.map((line) => `protected (checked after the run): ${line}`),
    ...homeChecked.summary.map((line) => `protected (home, checked after the run): ${line}`),
    `git: after the run, control files (config, hooks, commondir, info, modules, worktrees, a .git file or symlink) of repositories created or changed below ${writableRoots.join(', ')} are renamed aside (NAME.aleph-quarantined) and reported`,
    `tmp: TMPDIR=${inputs.tmpDir}`,
    ...(inputs.sessionHome === undefined ? [] : [`home: HOME=${inputs.sessionHome}`]),
  ];
  return {
    driver: 'linux',
    summary,
    tier: 'direct',
    notEnforced,
    identity,
    launch,
    home: inputs.sessionHome === undefined ? null : { inner: inputs.sessionHome, host: inputs.sessionHome },
    bwrapArgs: [],
    helperArgs: helper,
    landlock: { mode: 'required', rules, tcp, scoped: true },
    seccomp: {
      arch: seccomp.arch,
      network,
      denySpawn: !caps.spawnSubprocess,
      instructions: seccomp.instructions,
      rules: seccomp.rules,
      program: Buffer.from(seccomp.bytes).toString('base64'),
    },
    limits: {
      rlimits,
      maxPids: inputs.maxPids,
      maxMemoryMb: caps.maxMemoryMb ?? null,
      cpuQuotaPercent: inputs.cpuQuotaPercent ?? null,
    },
    network: {
      policy: net.kind,
      namespace: 'shared',
      proxySocket: null,
      bridge: null,
      hosts: net.kind === 'allowHosts' ? net.hosts : [],
    },
    mounts: [],
    stubs: [],
    cwd,
    workspace,
    tmpDir: inputs.tmpDir,
  };
}
