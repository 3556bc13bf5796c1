/**
 * What a profile is made of: the inputs a plan is built from besides the capabilities, and the plan
 * itself (`LinuxProfile`), the JSON `aleph-sandbox profile` prints. Built by `build-profile.ts` (tiers 1
 * and 2) and `direct-profile.ts` (tier 3).
 */

import type { HiddenPath, SandboxCapabilities, SandboxProfile } from '@aleph/sandbox-core';
import type { HostFacts } from '../host/host-facts.js';
import type { FsView } from '../mounts/fs-view.js';
import type { SeccompArch } from '../seccomp/bpf.js';
import type { SeccompNetworkMode } from '../seccomp/seccomp-program.js';
import type { LinuxTierId } from '../tiers/tiers.js';
import type { NetworkInputs, NetworkPlan } from './network-plan.js';
import type { NamespaceLimits } from './ns-limits.js';
import type { SessionTmpMountPoint } from './session-tmp-mount.js';

/** Everything a profile depends on besides the capabilities. */
export interface ProfileInputs {
  readonly host: HostFacts;
  readonly arch: SeccompArch;
  readonly helperPath: string;
  readonly landlock: 'best-effort' | 'required';
  readonly protectedPaths: readonly string[];
  /** Kept read-only in every home directory a writable root holds (`DEFAULT_HOME_PROTECTED_PATHS`). */
  readonly homeProtectedPaths: readonly string[];
  /** Hidden where a grant or the workspace contains them (a tmpfs or an empty file over each). */
  readonly vaultPaths: readonly string[];
  /** No grant may lie inside one of these (`refuseHiddenGrants`): the vault, the HOMEs, the audit log, the state. */
  readonly hiddenPaths: readonly HiddenPath[];
  /** Root host: a fixed sandbox uid/gid, or `undefined` for one of `uidRange` per run. */
  readonly sandboxUid: number | undefined;
  readonly sandboxGid: number | undefined;
  /** Root host: each run gets its own uid (and the same gid) from this inclusive range. */
  readonly uidRange: readonly [number, number];
  /** The host user's state directory (`~/.aleph/run`): uid locks, known git directories, snapshots. */
  readonly stateDir: string;
  /**
   * Where what the checks after the run set aside goes (`~/.aleph/quarantine/<session key>`), or
   * `undefined` to remove it instead.
   */
  readonly quarantineDir?: string | undefined;
  /**
   * The check after the run follows what changed: a root host's launcher keeps a change journal (fanotify,
   * per run); an unprivileged host's asks the fork server's change watcher (`journalKind: 'watch'`).
   */
  readonly journal?: boolean | undefined;
  readonly journalKind?: 'journal' | 'watch' | undefined;
  /** The session's HOME on the host (mounted at `INNER_HOME`), or `undefined` for none. */
  readonly sessionHome: string | undefined;
  /**
   * Tiers 1–2: the session's scratch space on the host (`run/session-tmp.ts`), bound at `/tmp` and kept
   * between its commands; `undefined`: a private tmpfs for each command.
   */
  readonly sessionTmp?: string | undefined;
  /**
   * Root host: names the session to the fork server, which keeps its network namespace between its runs
   * (native/linux/spawner/netpool.c). Sessions never share one. Default: runs make their own.
   */
  readonly networkKey?: string | undefined;
  /**
   * Root host: the helper makes /dev (native/linux/helper/devfs.c, with mknod). `false` where the host cannot
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
  /** The resolver's and transparent egress's settings (`network-plan.ts`). */
  readonly network?: NetworkInputs;
  /**
   * bwrap runs with root's privileges and the helper drops to the sandbox uid (tier 1). Default: the host
   * is root. `false` on a root host is tier 2: bwrap makes a user namespace.
   */
  readonly privileged?: boolean;
  /** Tier 2 on a root host: the uid (and gid) root is shown as inside the user namespace. */
  readonly innerUid?: number;
  /**
   * Tier 2 where bwrap cannot make its user and network namespaces itself (gVisor from 2023-11: it
   * refuses mount propagation changes in a user namespace nested in another, and its netlink the loopback
   * address bwrap sets): the launcher makes them (`--outer-ns`), mapping the host uid alone as uid 0, and
   * bwrap runs inside them as that uid 0 with neither --unshare-user nor --unshare-net. Default false.
   */
  readonly outerNamespaces?: boolean;
  /** Tier 2: the limits the helper sets in the sandbox's own namespaces (`ns-limits.ts`). Default none. */
  readonly nsLimits?: NamespaceLimits | undefined;
  /**
   * Tier 2 where the kernel refuses a fresh procfs (a runtime masks parts of /proc): /proc is this host's,
   * bound read-only (recursively, with its masks), and no hostname is set (podman's seccomp profile
   * refuses sethostname without CAP_SYS_ADMIN). Landlock keeps the command from other processes' memory,
   * environment and descriptors. Default false.
   */
  readonly hostProc?: boolean;
  /** The tier this profile is for, and what it does not enforce (see `tiers/tiers.ts`). */
  readonly tier?: LinuxTierId;
  readonly notEnforced?: readonly string[];
  /** Where the plan reads the filesystem. Default the real one; the driver records it to cache plans. */
  readonly fs?: FsView;
}

/** Tier 3 inputs beyond the usual ones. */
export interface DirectInputs extends ProfileInputs {
  readonly landlockAbi: number;
  /** The session's private TMPDIR on the host. */
  readonly tmpDir: string;
}

/** One Landlock rule as the helper applies it. */
export interface LandlockRule {
  readonly path: string;
  readonly access: 'read-exec' | 'read-write-exec' | 'device' | 'list';
  /**
   * The launcher's descriptor for a user path (a grant, the workspace, the session HOME; `LaunchPlan`
   * name): the helper adds the rule on the descriptor the launcher opened and checked, never on `path`
   * resolved again, so a command swapping the path meanwhile cannot widen the rule.
   */
  readonly fd?: string;
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
   * Why this plan is not the host's tier: its workspace or a write grant is on a filesystem the stronger
   * tier cannot serve (`driver/workspace-tier.ts`). Absent when it is the host's tier.
   */
  readonly tierFallback?: string;
  /**
   * Arguments of the host-side launcher (`aleph-sandbox-init --launch …`) before its `--`: the user paths
   * it opens without following symlinks (protected paths when they are there), the mounts it clones (root
   * host), the writable roots it checks after the run, the uid range and the state directory. `@NAME`, `@UID` and `@GID` in `bwrapArgs` are its substitutions.
   */
  readonly launch: readonly string[];
  /** HOME inside the sandbox and the host directory behind it. */
  readonly home: { readonly inner: string; readonly host: string } | null;
  /** Tiers 1–2: the session's scratch space behind `/tmp` (made before the run); absent: a tmpfs. */
  readonly sessionTmp?: string;
  /** The mount points beneath `/tmp` the run makes in `sessionTmp` first (a workspace in the host's /tmp). */
  readonly sessionTmpMountPoints?: readonly SessionTmpMountPoint[];
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
    /**
     * With `denySpawn`: the same program without the process-creation refusal, base64. A run whose changes
     * are recorded loads it, and the change recording's trapping filter refuses process creation instead
     * (the supervisor reports each refusal: `details.denials`, kind `process.spawn`).
     */
    readonly spawnTrappedProgram?: string;
  };
  readonly limits: {
    readonly rlimits: Readonly<Record<string, number>>;
    readonly maxPids: number;
    readonly maxMemoryMb: number | null;
    readonly cpuQuotaPercent: number | null;
    /** Tier 2: pid_max of the sandbox's PID namespace (`null`: not set). */
    readonly pidMax: number | null;
    /** Tier 2: the counts set in the sandbox's user namespace (`/proc/sys/user`). */
    readonly userns: Readonly<Record<string, number>>;
  };
  readonly network: {
    readonly policy: SandboxCapabilities['network']['kind'];
    readonly namespace: 'own' | 'shared';
    readonly proxySocket: string | null;
    readonly bridge: string | null;
    readonly hosts: readonly string[];
    /** The resolver inside (allowHosts): its address, the name patterns it answers for, and those it refuses. */
    readonly resolver: NetworkPlan['resolver'];
    /** Ports on which connections to an allowed name's address reach the proxy (allowHosts). */
    readonly egressPorts: readonly number[];
    /** Ports of the sandbox's loopback published on the host's 127.0.0.1 while the command runs. */
    readonly publish: readonly number[];
  };
  readonly mounts: readonly string[];
  /**
   * The host's TLS trust for a command with a network: CA variables naming the files mounted at
   * `/run/aleph/ca-N-NAME` (tiers 1–2; tier 3: where they are on the host) (`host-trust.ts`), set before
   * the command's own `env`.
   */
  readonly trustEnv?: Readonly<Record<string, string>>;
  /**
   * The protected paths of the writable roots and the homes they hold (absolute): read-only during the run
   * where the launcher finds them when it starts, set aside after the run where they were missing then
   * and appeared (tiers 1–2); checked against a snapshot after the run (tier 3). Nothing is made in place
   * of a missing one.
   */
  readonly protectedPaths: readonly string[];
  readonly cwd: string;
  readonly workspace: string;
}
