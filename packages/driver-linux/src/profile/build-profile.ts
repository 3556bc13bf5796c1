import path from 'node:path';
import {
  InvalidInputError,
  isPathWithin,
  type SandboxCapabilities,
  type SandboxProfile,
} from '@aleph/sandbox-core';
import type { HostFacts } from '../host/host-facts.js';
import { type FsView, liveFs } from '../mounts/fs-view.js';
import { LaunchPlan } from '../mounts/launch-plan.js';
import { homesWithin, planProtectedPaths, type Stub } from '../mounts/protected-paths.js';
import { type MountOp, renderMounts } from '../mounts/render-mounts.js';
import { BRIDGE_PORT, INNER_HELPER, INNER_HOME, INNER_PROXY_SOCKET } from '../options.js';
import type { SeccompArch } from '../seccomp/bpf.js';
import { buildSeccompProgram, type SeccompNetworkMode } from '../seccomp/seccomp-program.js';
import type { LinuxTierId } from '../tiers/tiers.js';
import { DEFAULT_MAX_OPEN_FILES, tmpfsSizeBytes } from './limits.js';

/** Everything a profile depends on besides the capabilities. */
export interface ProfileInputs {
  readonly host: HostFacts;
  readonly arch: SeccompArch;
  readonly helperPath: string;
  readonly landlock: 'best-effort' | 'required';
  readonly protectedPaths: readonly string[];
  /** Kept read-only in every home directory a writable root holds (`DEFAULT_HOME_PROTECTED_PATHS`). */
  readonly homeProtectedPaths: readonly string[];
  readonly vaultPaths: readonly string[];
  /** Root host: a fixed sandbox uid/gid, or `undefined` for one of `uidRange` per run. */
  readonly sandboxUid: number | undefined;
  readonly sandboxGid: number | undefined;
  /** Root host: each run gets its own uid (and the same gid) from this inclusive range. */
  readonly uidRange: readonly [number, number];
  /** The host user's state directory (`~/.aleph/run`): stub records and uid locks. */
  readonly stateDir: string;
  /** The session's HOME on the host (mounted at `INNER_HOME`), or `undefined` for none. */
  readonly sessionHome: string | undefined;
  /**
   * Root host: names the session to the fork server, which keeps its network namespace between its runs
   * (native/linux/netpool.c). Sessions never share one. Default: runs make their own.
   */
  readonly networkKey?: string | undefined;
  /**
   * Root host: the helper makes /dev (native/linux/devfs.c, with mknod). `false` where the host cannot
   * make device nodes (no CAP_MKNOD, a device policy): bwrap's --dev binds the host's. Default true.
   */
  readonly devInHelper?: boolean | undefined;
  readonly maxPids: number;
  /** `RLIMIT_NOFILE` (see `LinuxDriverOptions.maxOpenFiles`). Default `DEFAULT_MAX_OPEN_FILES`. */
  readonly maxOpenFiles?: number | undefined;
  /** The driver's `RLIMIT_FSIZE` in MiB; a command's `maxFileMb` may only lower it. Default: none. */
  readonly maxFileMb?: number | undefined;
  /** Size of each private tmpfs in MiB (see `tmpfsSizeBytes`). */
  readonly tmpfsSizeMb?: number | undefined;
  readonly cpuQuotaPercent: number | undefined;
  /** The Unix socket of the managed proxy for `allowHosts` (computed by the driver). */
  readonly proxySocket: string | undefined;
  /**
   * bwrap runs with root's privileges and the helper drops to the sandbox uid (tier 1). Default: the host
   * is root. `false` on a root host is tier 2: bwrap makes a user namespace.
   */
  readonly privileged?: boolean;
  /** Tier 2 on a root host: the uid (and gid) root is shown as inside the user namespace. */
  readonly innerUid?: number;
  /** The tier this profile is for, and what it does not enforce (see `tiers.ts`). */
  readonly tier?: LinuxTierId;
  readonly notEnforced?: readonly string[];
  /** Where the plan reads the filesystem. Default the real one; the driver records it to cache plans. */
  readonly fs?: FsView;
}

/** One Landlock rule as the helper applies it. */
export interface LandlockRule {
  readonly path: string;
  readonly access: 'read-exec' | 'read-write-exec' | 'device' | 'list';
}

/** The Linux profile: an inspectable, JSON-serialisable plan. `aleph-sandbox profile` prints it. */
export interface LinuxProfile extends SandboxProfile {
  readonly driver: 'linux';
  readonly identity:
    | {
        readonly mode: 'drop-to-uid';
        /** A fixed uid, or `'per-run'`: the launcher picks a free one of `range` for each run. */
        readonly uid: number | 'per-run';
        readonly gid: number | 'per-run';
        readonly range: readonly [number, number] | null;
      }
    | { readonly mode: 'user-namespace'; readonly uid: number }
    /** Tier 3: the host's uid, every capability dropped (no namespace to map it in). */
    | { readonly mode: 'keep-uid'; readonly uid: number; readonly capabilities: 'none' };
  /** The tier that runs it (`namespaces`, `user-namespace`, `direct`). */
  readonly tier: LinuxTierId;
  /** What this tier does not enforce here, each `name: sentence`. */
  readonly notEnforced: readonly string[];
  /**
   * Arguments of the host-side launcher (`aleph-sandbox-init --launch …`) before its `--`: the user paths
   * it opens without following symlinks, the stubs it may create, the mounts it clones (root host), the
   * uid range and the state directory. `@NAME`, `@UID` and `@GID` in `bwrapArgs` are its substitutions.
   */
  readonly launch: readonly string[];
  /** HOME inside the sandbox and the host directory behind it. */
  readonly home: { readonly inner: string; readonly host: string } | null;
  /** bwrap arguments up to and including the helper invocation and its `--`. */
  readonly bwrapArgs: readonly string[];
  readonly helperArgs: readonly string[];
  readonly landlock: {
    readonly mode: 'best-effort' | 'required';
    readonly rules: readonly LandlockRule[];
    readonly tcp: { readonly connectPorts: readonly number[] } | null;
    readonly scoped: boolean;
  };
  readonly seccomp: {
    readonly arch: SeccompArch;
    readonly network: SeccompNetworkMode;
    readonly denySpawn: boolean;
    readonly instructions: number;
    readonly rules: readonly string[];
    /** The BPF program, base64. */
    readonly program: string;
  };
  readonly limits: {
    readonly rlimits: Readonly<Record<string, number>>;
    readonly maxPids: number;
    readonly maxMemoryMb: number | null;
    readonly cpuQuotaPercent: number | null;
  };
  readonly network: {
    readonly policy: SandboxCapabilities['network']['kind'];
    readonly namespace: 'own' | 'shared';
    readonly proxySocket: string | null;
    readonly bridge: string | null;
    readonly hosts: readonly string[];
  };
  readonly mounts: readonly string[];
  readonly stubs: readonly Stub[];
  readonly cwd: string;
  readonly workspace: string;
}

/** Whether `uid`/`gid` may pass through directory `dir` (its execute bit for them). */
function passable(fs: FsView, dir: string, uid: number, gid: number): boolean {
  const st = fs.lstat(dir);
  if (st === undefined) return true;
  const bit = st.uid === uid ? 0o100 : st.gid === gid ? 0o010 : 0o001;
  return (st.mode & bit) !== 0;
}

function exists(fs: FsView, p: string): 'dir' | 'file' | undefined {
  const st = fs.lstat(p);
  return st === undefined ? undefined : st.type === 'dir' ? 'dir' : 'file';
}

/**
 * Builds the whole plan for one execution: mounts (system directories read-only, grants, the workspace
 * read-write, protected sub-paths read-only, vault paths and other sessions hidden, sensitive /etc files
 * masked), namespaces and identity, the Landlock rules, the seccomp program, limits and the network plan.
 *
 * @throws {InvalidInputError} for a granted path that does not exist, or a symlinked protected path.
 */
export function buildLinuxProfile(
  caps: SandboxCapabilities,
  cwd: string,
  workspace: string,
  inputs: ProfileInputs,
): LinuxProfile {
  const { host } = inputs;
  const fs = inputs.fs ?? liveFs;
  const privileged = inputs.privileged ?? host.isRoot;
  const plan = new LaunchPlan();
  const mounts: MountOp[] = [];
  const landlock: LandlockRule[] = [{ path: '/', access: 'list' }];

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
  mounts.push({ op: 'proc', dest: '/proc' });
  const tmpfsBytes = tmpfsSizeBytes(caps.maxMemoryMb, inputs.tmpfsSizeMb);
  mounts.push({ op: 'tmpfs', dest: '/tmp', mode: '1777', sizeBytes: tmpfsBytes });
  mounts.push({ op: 'tmpfs', dest: '/dev/shm', mode: '1777', sizeBytes: tmpfsBytes });
  landlock.push({ path: '/dev', access: 'device' }, { path: '/proc', access: 'read-exec' });
  landlock.push({ path: '/tmp', access: 'read-write-exec' }, { path: '/dev/shm', access: 'read-write-exec' });
  mounts.push({ op: 'ro-bind', src: inputs.helperPath, dest: INNER_HELPER });
  landlock.push({ path: INNER_HELPER, access: 'read-exec' });

  // Grants.
  caps.fsRead.forEach((p, i) => {
    const kind = exists(fs, p);
    if (kind === undefined) throw missingPath('fsRead', i, p);
    mounts.push({ op: 'ro-bind', src: p, dest: p, fd: plan.open(p), kind });
    landlock.push({ path: p, access: 'read-exec' });
  });
  caps.fsWrite.forEach((p, i) => {
    const kind = exists(fs, p);
    if (kind === undefined) throw missingPath('fsWrite', i, p);
    mounts.push({ op: 'bind', src: p, dest: p, fd: plan.open(p), kind });
    landlock.push({ path: p, access: 'read-write-exec' });
  });
  mounts.push({ op: 'bind', src: workspace, dest: workspace, fd: plan.open(workspace) });
  landlock.push({ path: workspace, access: 'read-write-exec' });
  if (inputs.sessionHome !== undefined) {
    mounts.push({ op: 'bind', src: inputs.sessionHome, dest: INNER_HOME, fd: plan.open(inputs.sessionHome) });
    landlock.push({ path: INNER_HOME, access: 'read-write-exec' });
  }

  // Other sessions' workspaces stay hidden even when a grant covers the workspace root: a fresh tmpfs
  // replaces it. On a root host the grant may also show real directories above it that root made 0700
  // (--allow-write ~ over ~/.aleph/workspaces): those the sandbox uid could not pass through are
  // replaced too, up to the grant, so it reaches its workspace and sees nothing it could not see before.
  const visible = [...caps.fsRead, ...caps.fsWrite, ...host.systemDirs.map((d) => d.path)];
  const workspaceRoot = path.dirname(workspace);
  if (visible.some((v) => isPathWithin(workspaceRoot, v))) {
    let hidden = workspaceRoot;
    for (
      let dir = path.dirname(workspaceRoot);
      privileged &&
      dir !== path.dirname(dir) &&
      visible.some((v) => v !== dir && isPathWithin(dir, v)) &&
      !passable(fs, dir, inputs.sandboxUid ?? inputs.uidRange[0], inputs.sandboxGid ?? inputs.uidRange[0]);
      dir = path.dirname(dir)
    ) {
      hidden = dir;
    }
    mounts.push({ op: 'tmpfs', dest: hidden, mode: '0755', hide: true });
  }
  // Vault paths are never visible.
  const vaultHidden: string[] = [];
  for (const vault of inputs.vaultPaths) {
    if (!visible.some((v) => isPathWithin(vault, v)) && !isPathWithin(vault, workspace)) continue;
    const kind = exists(fs, vault);
    if (kind === 'dir') mounts.push({ op: 'tmpfs', dest: vault, mode: '0700', readOnly: true, hide: true });
    else if (kind === 'file') mounts.push({ op: 'mask-file', dest: vault });
    else continue;
    vaultHidden.push(vault);
  }

  // Protected sub-paths of every writable root.
  const writableRoots = [workspace, ...caps.fsWrite.filter((p) => exists(fs, p) === 'dir')];
  const protection = planProtectedPaths(plan, writableRoots, inputs.protectedPaths, fs);
  mounts.push(...protection.mounts);
  // Home directories a writable root holds (the host user's, and /root and /home/* under a wide grant):
  // what the host runs from them next (shell startup, git and ssh config, ~/.aleph, …) stays read-only.
  const homes = homesWithin(writableRoots, host.home, fs);
  const homeProtection = planProtectedPaths(plan, homes, inputs.homeProtectedPaths, fs);
  mounts.push(...homeProtection.mounts);

  // Network.
  const net = caps.network;
  // With none and allowHosts the sandbox has its own network namespace with only a loopback interface
  // (and, for allowHosts, the bridge on it): inet sockets reach nothing but that loopback.
  const seccompNetwork: SeccompNetworkMode =
    net.kind === 'none' ? 'loopback' : net.kind === 'allowHosts' ? 'proxy-routed' : 'unrestricted';
  if (net.kind === 'allowHosts') {
    if (inputs.proxySocket === undefined) throw new Error('allowHosts needs a proxy socket');
    mounts.push({ op: 'bind', src: inputs.proxySocket, dest: INNER_PROXY_SOCKET });
  }

  // Identity and namespaces.
  const identity: LinuxProfile['identity'] = privileged
    ? inputs.sandboxUid === undefined
      ? { mode: 'drop-to-uid', uid: 'per-run', gid: 'per-run', range: inputs.uidRange }
      : {
          mode: 'drop-to-uid',
          uid: inputs.sandboxUid,
          gid: inputs.sandboxGid ?? inputs.sandboxUid,
          range: null,
        }
    : { mode: 'user-namespace', uid: inputs.innerUid ?? host.uid };
  const devInHelper = privileged && inputs.devInHelper !== false;
  const bwrap: string[] = ['--unshare-ipc', '--unshare-pid', '--unshare-uts', '--unshare-cgroup-try'];
  if (net.kind !== 'allowAll') bwrap.push('--unshare-net');
  if (privileged) {
    // bwrap runs as root without a user namespace (a root-mapped one would keep root's file identity);
    // the helper attaches the idmapped user-path mounts (CAP_SYS_ADMIN, and the two DAC capabilities to
    // resolve mount points in directories the idmap shows as the sandbox uid's), then empties the
    // bounding set and switches to the sandbox uid (the other three), before anything of the command runs.
    bwrap.push(
      '--cap-drop',
      'ALL',
      '--cap-add',
      'CAP_SYS_ADMIN',
      '--cap-add',
      'CAP_DAC_OVERRIDE',
      '--cap-add',
      'CAP_DAC_READ_SEARCH',
      '--cap-add',
      'CAP_SETUID',
      '--cap-add',
      'CAP_SETGID',
      '--cap-add',
      'CAP_SETPCAP',
    );
    // The helper makes /dev's device nodes (devfs.c).
    if (devInHelper) bwrap.push('--cap-add', 'CAP_MKNOD');
  } else {
    bwrap.push('--unshare-user');
    // Root without CAP_SYS_ADMIN (tier 2): root is shown as another uid inside, so its files are not root's.
    if (inputs.innerUid !== undefined)
      bwrap.push('--uid', String(inputs.innerUid), '--gid', String(inputs.innerUid));
    bwrap.push('--disable-userns', '--cap-drop', 'ALL');
  }
  bwrap.push('--die-with-parent', '--new-session', '--hostname', 'aleph-sandbox');
  const rendered = renderMounts(mounts, { inHelper: privileged, devInHelper });
  bwrap.push(...rendered.bwrap);
  // The helper changes into the cwd once its own mounts are made.
  bwrap.push('--chdir', '/');

  // The helper's own plan.
  const seccomp = buildSeccompProgram({
    arch: inputs.arch,
    network: seccompNetwork,
    denySpawn: !caps.spawnSubprocess,
  });
  const rlimits: Record<string, number> = {
    CORE: 0,
    NOFILE: inputs.maxOpenFiles ?? DEFAULT_MAX_OPEN_FILES,
  };
  if (caps.maxMemoryMb !== undefined) rlimits.AS = caps.maxMemoryMb * 1024 * 1024;
  const maxFileMb = Math.min(
    caps.maxFileMb ?? Number.POSITIVE_INFINITY,
    inputs.maxFileMb ?? Number.POSITIVE_INFINITY,
  );
  if (Number.isFinite(maxFileMb)) rlimits.FSIZE = maxFileMb * 1024 * 1024;
  const helper: string[] = [...rendered.helper];
  if (identity.mode === 'drop-to-uid')
    helper.push(
      '--uid',
      identity.uid === 'per-run' ? '@UID' : String(identity.uid),
      '--gid',
      identity.gid === 'per-run' ? '@GID' : String(identity.gid),
    );
  for (const [name, value] of Object.entries(rlimits)) helper.push('--rlimit', `${name}=${value}`);
  helper.push('--landlock', inputs.landlock);
  const flag = {
    'read-exec': '--ll-ro',
    'read-write-exec': '--ll-rw',
    device: '--ll-dev',
    list: '--ll-list',
  } as const;
  for (const rule of landlock) helper.push(flag[rule.access], rule.path);
  // No TCP rules: in its own network namespace a command may bind and connect on its loopback (a dev
  // server and its client), which reaches nothing else; with allowAll it shares the host's network.
  const tcp = null as { connectPorts: number[] } | null;
  if (tcp !== null) {
    helper.push('--ll-net', 'on');
    for (const port of tcp.connectPorts) helper.push('--ll-connect', String(port));
  }
  helper.push('--ll-scope', 'on');
  if (net.kind === 'allowHosts') helper.push('--bridge', `${BRIDGE_PORT}:${INNER_PROXY_SOCKET}`);
  helper.push('--chdir', cwd, '--seccomp-fd', '3', '--env-fd', '4');

  const launch: string[] = ['--state', inputs.stateDir];
  if (identity.mode === 'drop-to-uid') {
    if (identity.range !== null)
      launch.push('--uid-range', String(identity.range[0]), String(identity.range[1]));
    else launch.push('--uid', String(identity.uid));
  }
  // A root host's fork server lends the run its session's network namespace (netpool.c).
  if (privileged && net.kind !== 'allowAll' && inputs.networkKey !== undefined)
    launch.push('--net-pool', inputs.networkKey);
  launch.push(...plan.args);
  // After the run, repositories a command created or changed below the writable roots lose the control
  // files it wrote (renamed aside, reported): host git runs none of them.
  for (const root of writableRoots) launch.push('--git-sweep', plan.open(root));
  for (const clone of rendered.clones) launch.push('--clone', clone.name, clone.mode);

  const mountSummary = describeMounts(mounts);
  const summary = [
    `identity: ${identity.mode === 'drop-to-uid' ? `host is root; the program runs as ${identity.uid === 'per-run' ? `a uid of its own (${identity.range?.[0]}–${identity.range?.[1]}, one per running command)` : `uid ${identity.uid}/gid ${identity.gid}`} with no capabilities; the workspace and write grants are idmapped so their owner appears as that uid` : `user namespace as uid ${identity.uid}${inputs.innerUid !== undefined && host.isRoot ? ' (uid 0 outside: root-owned files it sees are its own)' : ''}, no capabilities, nested user namespaces disabled`}`,
    `namespaces: mount, pid, ipc, uts, cgroup${net.kind === 'allowAll' ? '' : ', net'}${privileged ? '' : ', user'}; dies with its parent; new session`,
    ...mountSummary,
    ...(inputs.sessionHome === undefined ? [] : [`home: HOME=${INNER_HOME} (from ${inputs.sessionHome})`]),
    ...protection.summary.map((s) => `protected: ${s}`),
    `git: after the run, control files (config, hooks, commondir, info, modules, worktrees, a .git file or symlink) of repositories created or changed below ${writableRoots.join(', ')} are renamed aside (NAME.aleph-quarantined) and reported`,
    ...homeProtection.summary.map((s) => `protected (home): ${s}`),
    ...vaultHidden.map((v) => `vault hidden: ${v}`),
    `landlock (${inputs.landlock}): ${landlock.map((r) => `${r.access} ${r.path}`).join('; ')}${tcp ? `; TCP connect only to ${tcp.connectPorts.length > 0 ? tcp.connectPorts.join(', ') : 'nothing'}` : ''}; abstract unix sockets and signals scoped`,
    ...seccomp.rules.map((r) => `seccomp: ${r}`),
    `limits: ${Object.entries(rlimits)
      .map(([k, v]) => `RLIMIT_${k}=${v}`)
      .join(
        ', ',
      )}; processes ≤ ${inputs.maxPids}${inputs.cpuQuotaPercent ? `; CPU ≤ ${inputs.cpuQuotaPercent}% (cgroup)` : ''}`,
    net.kind === 'none'
      ? 'network: own namespace with loopback only (bind, listen and connect on it work; nothing else is reachable)'
      : net.kind === 'allowHosts'
        ? `network: own namespace with loopback only; 127.0.0.1:${BRIDGE_PORT} bridged to the managed proxy allowing ${net.hosts.join(', ')}`
        : 'network: the host network, unfiltered',
  ];
  const tier = inputs.tier ?? (privileged ? 'namespaces' : 'user-namespace');
  const notEnforced = inputs.notEnforced ?? [];
  summary.unshift(`tier: ${tier}`, ...notEnforced.map((g) => `not enforced: ${g}`));
  return {
    driver: 'linux',
    summary,
    tier,
    notEnforced,
    identity,
    launch,
    home: inputs.sessionHome === undefined ? null : { inner: INNER_HOME, host: inputs.sessionHome },
    bwrapArgs: [...bwrap, INNER_HELPER, ...helper, '--'],
    helperArgs: helper,
    landlock: { mode: inputs.landlock, rules: landlock, tcp, scoped: true },
    seccomp: {
      arch: seccomp.arch,
      network: seccompNetwork,
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
      namespace: net.kind === 'allowAll' ? 'shared' : 'own',
      proxySocket: net.kind === 'allowHosts' ? (inputs.proxySocket ?? null) : null,
      bridge: net.kind === 'allowHosts' ? `127.0.0.1:${BRIDGE_PORT} -> ${INNER_PROXY_SOCKET}` : null,
      hosts: net.kind === 'allowHosts' ? net.hosts : [],
    },
    mounts: mountSummary,
    stubs: [...protection.stubs, ...homeProtection.stubs],
    cwd,
    workspace,
  };
}

function describeMounts(ops: readonly MountOp[]): string[] {
  return ops.map((op) => {
    switch (op.op) {
      case 'ro-bind':
        return `mount: ${op.dest} read-only${op.src === op.dest ? '' : ` (from ${op.src})`}`;
      case 'bind':
        return `mount: ${op.dest} read-write${op.src === op.dest ? '' : ` (from ${op.src})`}`;
      case 'mask-file':
        return `mount: ${op.dest} hidden (empty)`;
      case 'tmpfs':
        return `mount: ${op.dest} ${op.hide ? 'hidden (empty)' : `private tmpfs${op.sizeBytes === undefined ? '' : ` of ${op.sizeBytes / 1048576} MiB`}`}`;
      case 'symlink':
        return `mount: ${op.dest} -> ${op.target}`;
      default:
        return `mount: ${op.dest} fresh ${op.op}`;
    }
  });
}

function missingPath(field: 'fsRead' | 'fsWrite', index: number, p: string): InvalidInputError {
  return new InvalidInputError(
    'ALEPH_INVALID_COMMAND',
    `capabilities.${field}[${index}]`,
    p,
    'does not exist',
    'create it first or remove it from the grant',
  );
}
