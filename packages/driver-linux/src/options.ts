/** The options of `createLinuxDriver`, the fixed host-side environment, and the driver's constants. */
import type { ParentProxy, Resolver } from '@aleph/proxy';

export {
  DEFAULT_ENV_ALLOWLIST,
  DEFAULT_HOME_PROTECTED_PATHS,
  DEFAULT_PROTECTED_PATHS,
} from '@aleph/sandbox-core';

/** Options of `createLinuxDriver`. */
export interface LinuxDriverOptions {
  /** bubblewrap binary. Default: `bwrap` found on PATH. */
  readonly bwrapPath?: string;
  /** The native helper. Default: `resolveHelperPath()` (a build from source in `native/`, else the platform package's prebuilt one). */
  readonly helperPath?: string;
  /** `best-effort` (default) applies the best Landlock ABI available and reports it; `required` refuses to run without Landlock. */
  readonly landlock?: 'best-effort' | 'required';
  /** Sub-paths of writable roots kept read-only. Default `DEFAULT_PROTECTED_PATHS` (sandbox-core). */
  readonly protectedPaths?: readonly string[];
  /**
   * Kept read-only, and impossible to create, in every home directory a writable root holds (the host
   * user's, /root, /home/*). Default `DEFAULT_HOME_PROTECTED_PATHS` (sandbox-core).
   */
  readonly homeProtectedPaths?: readonly string[];
  /** Protect the whole `.git` directory instead of its control files. */
  readonly protectAllGit?: boolean;
  /** The audit JSONL file, if one is written: never visible inside, whatever is granted. */
  readonly auditLogPath?: string;
  /** Paths never visible inside, whatever is granted. Default `~/.aleph/data`, `~/.aleph/.shared_token`. */
  readonly vaultPaths?: readonly string[];
  /**
   * When the host runs as root, every sandboxed program runs as this one uid/gid. Default: none, each
   * running command gets a uid of its own from `sandboxUidRange`.
   */
  readonly sandboxUid?: number;
  readonly sandboxGid?: number;
  /**
   * Root host: the inclusive range each running command's own uid (and gid) comes from, so per-uid kernel
   * limits (processes, inotify instances), signals and file access are per command. Default
   * `DEFAULT_SANDBOX_UID_RANGE`. Idmapped mounts keep it invisible in the user's files.
   */
  readonly sandboxUidRange?: readonly [number, number];
  /**
   * Where each session's HOME lives on the host (`<homeRoot>/<session key>`); inside it is `/run/aleph/home`.
   * Default `~/.aleph/homes`. `false` gives commands no HOME directory of their own (HOME is then the
   * workspace, and caches land in it).
   */
  readonly homeRoot?: string | false;
  /** The host user's state directory (uid locks, known git directories, snapshots). Default `~/.aleph/run`. */
  readonly stateDir?: string;
  /**
   * Where what the check after each run sets aside goes, one directory per session
   * (`<quarantineRoot>/<session key>`), out of the user's tree and never executable. Default
   * `~/.aleph/quarantine` (`<stateDir>/quarantine` with a `stateDir` of your own). Never visible to a
   * sandbox.
   */
  readonly quarantineRoot?: string;
  /**
   * What the quarantine may cost the host, in allocated bytes (a sparse file as the blocks it has, the
   * links of one file as one copy): `runBytes` per run (default 64 MiB), `sessionBytes` per session's
   * quarantine (default 512 MiB). What does not fit is removed all the same, and the run's details say so
   * (`quarantineNotKept`).
   */
  readonly quarantineBudget?: { readonly runBytes?: number; readonly sessionBytes?: number };
  /**
   * Loader variables (`LD_*`) a command's `env` may set. Default none: any other `LD_*` in `env` is refused
   * with `ALEPH_INVALID_COMMAND`. The command's environment reaches only the program, never bwrap or the
   * helper.
   */
  readonly allowLoaderEnv?: readonly string[];
  /** Process limit per execution (cgroup `pids.max`, else `RLIMIT_NPROC`). Default 200. */
  readonly maxPids?: number;
  /**
   * Open files per process (`RLIMIT_NOFILE`). Default 1024, but never more than `fs.file-max / (4 ×
   * maxPids)` nor this process's own hard limit, so an execution holding `maxPids` processes with every
   * descriptor open stays well below the host's file table.
   */
  readonly maxOpenFiles?: number;
  /**
   * Largest file a command may write, in MiB (`RLIMIT_FSIZE`), for every command; a command's own
   * `capabilities.maxFileMb` may only lower it. Default: no limit.
   */
  readonly maxFileMb?: number;
  /**
   * Size of each of the private `/tmp` and `/dev/shm` tmpfs mounts, in MiB. Default 512
   * (`DEFAULT_TMPFS_SIZE_MB`). A command with `maxMemoryMb` gets at most half of its limit for each, so
   * the two together never hold more than the memory it may use.
   */
  readonly tmpfsSizeMb?: number;
  /** CPU limit in percent of one core (cgroup `cpu.max` only). Default: none. */
  readonly cpuQuotaPercent?: number;
  /** Host environment variables passed through (patterns ending in `*` match prefixes). */
  readonly envAllowlist?: readonly string[];
  /** Settings for the managed proxy started for `allowHosts` commands. */
  readonly proxy?: {
    /** Deny patterns applied to every allowlist. */
    readonly deny?: readonly string[];
    readonly resolver?: Resolver;
    /** Close an unused proxy after this long. Default 30 s. */
    readonly idleMs?: number;
    /** A parent HTTP proxy (CONNECT) the managed proxy reaches allowed hosts through. */
    readonly parent?: ParentProxy;
    /**
     * Transparent egress (tiers 1–2): the TCP ports on which a connection to an allowed name's address
     * (as the sandbox's resolver gave it) reaches the managed proxy as `CONNECT name:port`, and one to any
     * other address as `CONNECT address:port`, for clients that ignore the proxy variables. Every port an
     * allowHosts entry names is added. A connection to another port is refused inside and recorded as a
     * denial. Default `[80, 443]`.
     */
    readonly egressPorts?: readonly number[];
  };
  /**
   * The weakest tier a command may run in: 1 bubblewrap namespaces (root with `CAP_SYS_ADMIN`), 2 bubblewrap
   * in a user namespace, 3 no namespaces (the helper alone: Landlock, seccomp, limits; only with Landlock).
   * The preflight picks the strongest tier that runs `true` here; none at least this strong is an
   * `ALEPH_DRIVER_UNAVAILABLE` error. Default 3.
   */
  readonly minimumTier?: 1 | 2 | 3;
  /**
   * Start each run's host-side launcher through a small fork server (`aleph-sandbox-init --spawner`,
   * started once) instead of forking this Node process, which takes milliseconds once its heap is large.
   * Default true; where the server cannot start, runs fall back to `child_process.spawn`.
   */
  readonly forkServer?: boolean;
  /**
   * The host cache (`<stateDir>/tier-cache-*.json`): `use` takes the preflight's verdict and the
   * mechanisms' facts from it while the host is unchanged (kernel, helper and bwrap binaries, uid,
   * capabilities, seccomp and namespace state…), so a new process does not probe again, and drops it when
   * a run fails in a way it could explain; `refresh` probes afresh and keeps the verdict there (doctor);
   * `off` (default) neither reads nor writes it.
   */
  readonly hostCache?: 'use' | 'refresh' | 'off';
  /**
   * Find what a run changed with a fanotify change journal where the host can keep one (a root host), or,
   * without root, with the fork server's change watcher (fanotify inode marks kept between runs; a tree's
   * first run walks while it is marked), so the check after the run costs what the command changed.
   * `false`: always the complete walk of every
   * writable root (it costs the size of the trees; benchmarks compare the two). Default true.
   */
  readonly changeJournal?: boolean;
  /**
   * Each run's change set (`details.changes`) and its pre-run copies for `undo(runId)`, kept under
   * `<stateDir>/changes/` (seccomp user notification, copy before write): `enabled` (default true), the
   * per-session budget `maxBytes` (allocated bytes; default 2 GiB, oldest runs dropped first) and
   * `maxFileBytes`, the largest file copied (default 512 MiB). `keepOnDispose` (default true): a session's
   * change sets stay when it ends, until the budget prunes them; false: the runs this driver recorded go when
   * their session is closed and when the driver is disposed. `[sandbox.changes]` of the config.
   */
  readonly changes?: {
    readonly enabled?: boolean;
    readonly maxBytes?: number;
    readonly maxFileBytes?: number;
    readonly keepOnDispose?: boolean;
  };
  /** cgroup v2 mount point. Default: detected. Tests point it at a fake tree. */
  readonly cgroupRoot?: string;
}

/**
 * The whole environment of every host-side process the driver starts (the fork server, the launcher, and
 * through it bwrap): the caller's environment never reaches them.
 */
export const HOST_SIDE_ENV = { PATH: '/usr/sbin:/usr/bin:/sbin:/bin' } as const;

export const DEFAULT_SANDBOX_UID = 65533;
/** Root host: running commands' own uids come from this range (above systemd's container ranges). */
export const DEFAULT_SANDBOX_UID_RANGE: readonly [number, number] = [1_879_048_192, 1_879_049_215];
export const DEFAULT_MAX_PIDS = 200;
/** Port the in-namespace bridge listens on (each sandbox has its own network namespace). */
export const BRIDGE_PORT = 3128;
/** Where the helper and the proxy socket appear inside the sandbox. */
export const INNER_HELPER = '/run/aleph/init';
export const INNER_PROXY_SOCKET = '/run/aleph/proxy.sock';
/** The session's HOME inside the sandbox. */
export const INNER_HOME = '/run/aleph/home';
