import type { ParentProxy, Resolver } from '@aleph/proxy';
import type { MacosFs } from './files-binding.js';

/** Options of `createMacosDriver`. */
export interface MacosDriverOptions {
  /** `sandbox-exec`. Default `/usr/bin/sandbox-exec`. */
  readonly sandboxExecPath?: string;
  /** Sub-paths of writable roots kept read-only. Default `DEFAULT_PROTECTED_PATHS` (sandbox-core). */
  readonly protectedPaths?: readonly string[];
  /** Protect the whole `.git` directory instead of its control files. */
  readonly protectAllGit?: boolean;
  /**
   * Kept read-only, and impossible to create, in every home directory a writable root holds (the user's
   * real home, `/Users/*`, `/var/root`). Default `DEFAULT_HOME_PROTECTED_PATHS` (sandbox-core).
   */
  readonly homeProtectedPaths?: readonly string[];
  /** Paths never readable or writable, whatever is granted. Default `~/.aleph/data`, `~/.aleph/.shared_token`. */
  readonly vaultPaths?: readonly string[];
  /** The audit JSONL file: never readable or writable, whatever is granted. Default none. */
  readonly auditLogPath?: string;
  /**
   * The user's `~/.aleph` (config, compile cache, workspaces), resolved with realpath: never writable,
   * whatever is granted, except each session's own workspace inside it. Default `~/.aleph`.
   */
  readonly alephDir?: string;
  /** Host environment variables passed through (patterns ending in `*` match prefixes). */
  readonly envAllowlist?: readonly string[];
  /**
   * Loader variables (`DYLD_*`, `LD_*`) a command's `env` may set. Default none: any other is refused with
   * `ALEPH_INVALID_COMMAND` naming it (`LOADER_ENV_PATTERNS.macos`, sandbox-core).
   */
  readonly allowLoaderEnv?: readonly string[];
  /**
   * After a command fails, read its Seatbelt denials from the unified log (`log show`, bounded to a few
   * seconds) and attach them to the output as `details.violations`. Default true.
   */
  readonly collectViolations?: boolean;
  /** Override `process.platform` (tests run the driver elsewhere with a stand-in `sandbox-exec`). */
  readonly platform?: NodeJS.Platform;
  /** The file-system calls of the file mechanism (tests pass a fake; default: macOS's own). */
  readonly filesBinding?: MacosFs;
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
}

/**
 * Directories every command may read and execute from: the OS, its developer tools and the common
 * package-manager prefixes. Resolved with realpath on the host (`/etc` is `/private/etc` on macOS).
 */
export const SYSTEM_READ_PATHS = [
  '/usr',
  '/bin',
  '/sbin',
  '/System',
  '/Library/Frameworks',
  '/Library/Preferences',
  '/Library/Developer/CommandLineTools',
  '/Applications/Xcode.app',
  '/opt/homebrew',
  '/private/etc',
  '/private/var/db/timezone',
  '/private/var/select',
  '/private/var/db/xcode_select_link',
] as const;

/**
 * Firmlinked names programs open by their short form (`/etc/hosts`, `/tmp`, `/var/…`): readable as
 * links (metadata), never as directories.
 */
export const FIRMLINK_NAMES = ['/etc', '/tmp', '/var'] as const;

/** Device nodes ordinary tools need, with the access each gets. */
export const DEVICE_NODES: readonly { readonly path: string; readonly access: 'read' | 'read-write' }[] = [
  { path: '/dev/null', access: 'read-write' },
  { path: '/dev/zero', access: 'read' },
  { path: '/dev/random', access: 'read' },
  { path: '/dev/urandom', access: 'read' },
  { path: '/dev/tty', access: 'read-write' },
  // dyld and libSystem probe it; denying it only fills the log.
  { path: '/dev/dtracehelper', access: 'read-write' },
];

/**
 * Mach services a command may look up, and why. Everything else (keychain, window server, launch
 * services, pasteboard, …) stays denied.
 */
export const MACH_SERVICES: readonly { readonly name: string; readonly why: string }[] = [
  { name: 'com.apple.logd', why: 'os_log from system libraries' },
  { name: 'com.apple.system.logger', why: 'legacy ASL logging from system libraries' },
  { name: 'com.apple.trustd', why: 'TLS certificate trust evaluation (no DNS needed for it)' },
  { name: 'com.apple.trustd.agent', why: 'TLS certificate trust evaluation, per-user agent' },
  {
    name: 'com.apple.system.opendirectoryd.libinfo',
    why: 'user and group lookups (getpwuid: id, ls -l, git)',
  },
  { name: 'com.apple.cfprefsd.daemon', why: 'reading system preferences (CFPreferences)' },
  { name: 'com.apple.cfprefsd.agent', why: 'reading user preferences (CFPreferences)' },
  {
    name: 'com.apple.system.notification_center',
    why: 'notify(3): timezone and locale change notifications',
  },
];

/** Extra mach services for `allowAll`: the system resolver's configuration. */
export const RESOLVER_MACH_SERVICES: readonly { readonly name: string; readonly why: string }[] = [
  { name: 'com.apple.SystemConfiguration.DNSConfiguration', why: 'the resolver configuration' },
  { name: 'com.apple.SystemConfiguration.configd', why: 'network configuration lookups' },
  { name: 'com.apple.dnssd.service', why: 'DNS-SD / mDNSResponder queries' },
];

/** Where `sandbox-exec` lives on every macOS release that has it. */
export const DEFAULT_SANDBOX_EXEC = '/usr/bin/sandbox-exec';
/** PATH for commands when the command does not set one. */
export const DEFAULT_PATH = '/usr/bin:/bin:/usr/sbin:/sbin:/usr/local/bin:/opt/homebrew/bin';
