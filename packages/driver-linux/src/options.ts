import type { ParentProxy, Resolver } from '@aleph/proxy';

export { DEFAULT_ENV_ALLOWLIST, DEFAULT_PROTECTED_PATHS } from '@aleph/sandbox-core';

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
  /** Protect the whole `.git` directory instead of `.git/hooks` and `.git/config`. */
  readonly protectAllGit?: boolean;
  /** Paths never visible inside, whatever is granted. Default `~/.aleph/data`, `~/.aleph/.shared_token`. */
  readonly vaultPaths?: readonly string[];
  /** When the host runs as root, the sandboxed program runs as this uid/gid. Default 65533. */
  readonly sandboxUid?: number;
  readonly sandboxGid?: number;
  /** Process limit per execution (cgroup `pids.max`, else `RLIMIT_NPROC`). Default 200. */
  readonly maxPids?: number;
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
  };
  /** cgroup v2 mount point. Default: detected. Tests point it at a fake tree. */
  readonly cgroupRoot?: string;
}

export const DEFAULT_SANDBOX_UID = 65533;
export const DEFAULT_MAX_PIDS = 200;
/** Port the in-namespace bridge listens on (each sandbox has its own network namespace). */
export const BRIDGE_PORT = 3128;
/** Where the helper and the proxy socket appear inside the sandbox. */
export const INNER_HELPER = '/run/aleph/init';
export const INNER_PROXY_SOCKET = '/run/aleph/proxy.sock';
