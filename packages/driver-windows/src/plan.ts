import { existsSync, lstatSync, readdirSync, realpathSync } from 'node:fs';
import { isIP } from 'node:net';
import path from 'node:path';
import {
  defaultHomeProtectedPaths,
  type HiddenPath,
  InvalidInputError,
  protectedEntryKind,
  refuseHiddenGrants,
  type SandboxCapabilities,
  type SandboxProfile,
} from '@aleph/sandbox-core';
import { ACCESS, type JobLimits, SID, UI_RESTRICT_ALL } from './win32.js';

/** The tiers, strongest first. */
export type Tier = 'appcontainer' | 'restricted' | 'host';

/** Protected sub-paths of writable roots on Windows, by default: all of `.git` and the agents' own dirs. */
export const DEFAULT_WINDOWS_PROTECTED_PATHS = ['.git', '.aleph', '.codex', '.agents'] as const;

/**
 * The home list on Windows: sandbox-core's `defaultHomeProtectedPaths('windows')` (what Git for Windows,
 * OpenSSH, npm, pip and the editors read under `%USERPROFILE%` too, and an empty stub leaves working), plus what Windows itself runs from a
 * profile: the Startup folder and the PowerShell profiles.
 */
export const WINDOWS_HOME_PROTECTED_PATHS = [
  ...defaultHomeProtectedPaths('windows'),
  'AppData/Roaming/Microsoft/Windows/Start Menu/Programs/Startup',
  'Documents/PowerShell',
  'Documents/WindowsPowerShell',
] as const;

/**
 * Whether a missing protected entry is stubbed as a directory: what sandbox-core's `protectedEntryKind`
 * says is one (`.ssh`, `.config/git`, `.local/bin`, …), not a file such as `.kube/config`.
 */
export function isDirectoryEntry(rel: string): boolean {
  return protectedEntryKind(rel) === 'dir';
}

/** Paths compared as Windows does: without regard to case (only on Windows hosts). */
const fold = (p: string) => (path.sep === '\\' ? p.toLowerCase() : p);

/** True when `child` is `parent` or lies beneath it (component boundaries, case-insensitive on Windows). */
export function isPathWithin(child: string, parent: string): boolean {
  const c = fold(path.resolve(child));
  const p = fold(path.resolve(parent));
  return c === p || c.startsWith(p.endsWith(path.sep) ? p : `${p}${path.sep}`);
}

/** The vault paths and the audit log, when the driver gave no list of its own. */
function defaultHidden(options: WindowsPlanOptions): HiddenPath[] {
  return [
    ...(options.vaultPaths ?? []).map((p) => ({ path: p, what: 'the vault' })),
    ...(options.auditLogPath === undefined ? [] : [{ path: options.auditLogPath, what: 'the audit log' }]),
  ];
}

/** The realpath of `p`, or `p` resolved when it does not exist. */
function real(p: string): string {
  try {
    return realpathSync.native(p);
  } catch {
    return path.resolve(p);
  }
}

/**
 * The host's home directories, realpath'd and existing: `%USERPROFILE%` and every directory in
 * `<system drive>\Users`. The plan applies the home list to those a writable root holds.
 */
export function windowsHomes(
  userProfile: string | undefined = process.env.USERPROFILE,
  usersDir = `${process.env.SystemDrive ?? 'C:'}\\Users`,
): string[] {
  const candidates = userProfile === undefined ? [] : [userProfile];
  try {
    for (const name of readdirSync(usersDir)) candidates.push(path.join(usersDir, name));
  } catch {
    // no such directory (not Windows)
  }
  const isDir = (p: string) => {
    try {
      return lstatSync(p).isDirectory();
    } catch {
      return false;
    }
  };
  return [...new Set(candidates.filter(isDir).map(real))];
}

/** The Windows profile: the tier chain and every ACL, label and job setting it will apply. */
export interface WindowsProfile extends SandboxProfile {
  readonly driver: 'windows';
  /** Tried in order; a tier that cannot be set up hands over to the next (see the driver docs). */
  readonly tiers: readonly Tier[];
  readonly network: 'none' | 'all';
  /** AppContainer capability SIDs (tier 1). */
  readonly capabilitySids: readonly string[];
  /** ACEs granted to the AppContainer SID for the run (tier 1), revoked afterwards. */
  readonly grants: readonly {
    readonly path: string;
    readonly access: 'read' | 'read-write';
    readonly mask: number;
  }[];
  /** Writable roots: labelled low integrity for the run (tier 2). */
  readonly writableRoots: readonly string[];
  /**
   * Protected paths: denied to the AppContainer (tier 1), kept at medium integrity (tier 2). Missing ones
   * are created before the run (`stubs` as directories, `fileStubs` as empty files) so they can carry
   * the ACE and the label.
   */
  readonly protected: {
    readonly existing: readonly string[];
    readonly stubs: readonly string[];
    readonly fileStubs: readonly string[];
    /** The home directories inside writable roots whose home list applies. */
    readonly homes: readonly string[];
    /** Never writable, whatever is granted: the real `~/.aleph` (the session's workspace inside keeps its grant). */
    readonly neverWritable: readonly string[];
    /** Never readable or writable: the vault paths and the audit log that a grant reaches. */
    readonly hidden: readonly string[];
    /** Directories above protected, never-writable and hidden paths: may not be renamed or removed. */
    readonly parents: readonly string[];
  };
  readonly job: JobLimits & { readonly uiRestrictions: number };
}

/** Options of {@link planWindowsProfile}. */
export interface WindowsPlanOptions {
  readonly protectedPaths: readonly string[];
  /** Home directories of the host (realpath'd); the home list applies in those a writable root holds. */
  readonly homes?: readonly string[];
  /** The home list. Default none. */
  readonly homeProtectedPaths?: readonly string[];
  /** The user's `~/.aleph`: never writable (realpath'd here). */
  readonly alephDir?: string | undefined;
  /** Never readable or writable. */
  readonly vaultPaths?: readonly string[];
  /** The audit JSONL file: never readable or writable. */
  readonly auditLogPath?: string | undefined;
  /**
   * No grant may lie inside one of these (sandbox-core's `hiddenPaths`: the vault, the audit log or its
   * directory). Default: the vault paths and the audit log file.
   */
  readonly hiddenPaths?: readonly HiddenPath[] | undefined;
  /** Process limit when subprocesses are allowed (JobObject ActiveProcessLimit). */
  readonly maxProcesses: number;
  /** Start at tier 1 (and refuse to go further when `requireAppContainer`). */
  readonly tiers: readonly Tier[];
}

/**
 * Refuses a writable path one of whose components is a symbolic link or junction: an ACL or label set on
 * it would land on whatever it points to.
 */
export function assertNoLinkComponents(field: string, p: string): void {
  const resolved = path.resolve(p);
  const { root } = path.parse(resolved);
  let current = root;
  for (const part of resolved.slice(root.length).split(path.sep).filter(Boolean)) {
    current = path.join(current, part);
    let isLink = false;
    try {
      isLink = lstatSync(current).isSymbolicLink();
    } catch {
      return; // the rest does not exist yet
    }
    if (isLink) {
      throw new InvalidInputError(
        'ALEPH_INVALID_COMMAND',
        field,
        p,
        `has a symbolic link or junction at ${current}; ACLs set through it would land on its target`,
        'grant the real path (fs.realpathSync) instead',
      );
    }
  }
}

/**
 * Plans one execution: tiers, AppContainer capabilities from the network policy, ACL grants, protected
 * paths (existing ones denied, missing ones stubbed) and the job limits.
 *
 * @throws {InvalidInputError} for a writable path with a link component
 * @throws {CapabilityDeniedError} for a grant inside a hidden path (the vault, the audit log's directory)
 */
export function planWindowsProfile(
  caps: SandboxCapabilities,
  cwd: string,
  workspace: string,
  options: WindowsPlanOptions,
): WindowsProfile {
  if (caps.network.kind === 'allowHosts') {
    throw new InvalidInputError(
      'ALEPH_INVALID_COMMAND',
      'capabilities.network',
      'allowHosts',
      'cannot be enforced by the Windows driver',
      'use network none or allowAll (see the ALEPH_CAPABILITY_UNSUPPORTED message for the addresses it would need)',
    );
  }
  // A grant inside a hidden path cannot be hidden from itself (case-insensitive, as NTFS is).
  refuseHiddenGrants(caps, options.hiddenPaths ?? defaultHidden(options), { ignoreCase: path.sep === '\\' });
  assertNoLinkComponents('workspace', workspace);
  caps.fsWrite.forEach((p, i) => {
    assertNoLinkComponents(`capabilities.fsWrite[${i}]`, p);
  });
  const writableRoots = [...new Set([workspace, ...caps.fsWrite].map((p) => path.resolve(p)))];
  const grants = [
    ...writableRoots.map((p) => ({ path: p, access: 'read-write' as const, mask: ACCESS.readWrite })),
    ...caps.fsRead
      .map((p) => path.resolve(p))
      .filter((p) => !writableRoots.includes(p))
      .map((p) => ({ path: p, access: 'read' as const, mask: ACCESS.read })),
  ];
  const readable = [...writableRoots, ...grants.map((g) => g.path)];
  const inWritable = (p: string) => writableRoots.some((r) => isPathWithin(p, r));
  const existing: string[] = [];
  const stubs: string[] = [];
  const fileStubs: string[] = [];
  const protect = (abs: string, asDirectory: boolean) => {
    if ([...existing, ...stubs, ...fileStubs].some((p) => fold(p) === fold(abs))) return;
    if (existsSync(abs)) existing.push(abs);
    else (asDirectory ? stubs : fileStubs).push(abs);
  };
  for (const root of writableRoots) {
    for (const rel of options.protectedPaths) protect(path.join(root, rel), true);
  }
  const homes = [...new Set((options.homes ?? []).map(real))].filter(inWritable);
  for (const home of homes) {
    for (const rel of options.homeProtectedPaths ?? []) protect(path.join(home, rel), isDirectoryEntry(rel));
  }
  const alephDir = options.alephDir === undefined ? undefined : real(options.alephDir);
  const neverWritable = alephDir !== undefined && inWritable(alephDir) ? [alephDir] : [];
  const hidden: string[] = [];
  for (const p of [
    ...(options.vaultPaths ?? []),
    ...(options.auditLogPath === undefined ? [] : [options.auditLogPath]),
  ]) {
    const abs = real(p);
    if (!readable.some((r) => isPathWithin(abs, r))) continue;
    if (existsSync(abs)) hidden.push(abs);
    else if (inWritable(abs) && !neverWritable.some((n) => isPathWithin(abs, n))) {
      // Missing, and the command could plant it first: created empty before the run, then denied.
      fileStubs.push(abs);
      hidden.push(abs);
    }
    // Missing elsewhere: the command cannot create it (read-only, or inside the never-writable ~/.aleph).
  }
  // Every directory between a writable root (included) and a protected path (excluded): renaming one
  // would carry the protected path to a name no ACE covers.
  const parents: string[] = [];
  for (const p of [...existing, ...stubs, ...fileStubs, ...neverWritable, ...hidden]) {
    for (let d = path.dirname(p); d !== path.dirname(d) && inWritable(d); d = path.dirname(d)) {
      if (!parents.some((x) => fold(x) === fold(d))) parents.push(d);
    }
  }
  const network = caps.network.kind === 'allowAll' ? 'all' : 'none';
  const capabilitySids = network === 'all' ? [SID.internetClient, SID.privateNetworkClientServer] : [];
  const job = {
    activeProcessLimit: caps.spawnSubprocess ? options.maxProcesses : 1,
    processMemoryLimit: caps.maxMemoryMb === undefined ? null : caps.maxMemoryMb * 1024 * 1024,
    killOnJobClose: true,
    dieOnUnhandledException: true,
    uiRestrictions: UI_RESTRICT_ALL,
  };
  const summary = [
    `tiers: ${options.tiers.join(' → ')} (each inside a JobObject)`,
    `AppContainer capabilities: ${capabilitySids.length === 0 ? 'none (no network)' : 'internetClient, privateNetworkClientServer'}`,
    ...grants.map((g) => `grant ${g.access}: ${g.path}`),
    `protected (denied to the sandbox): ${[...existing, ...stubs, ...fileStubs].join(', ') || 'nothing'}${stubs.length + fileStubs.length > 0 ? ` (stubs created for ${stubs.length + fileStubs.length} missing)` : ''}`,
    ...(homes.length === 0 ? [] : [`home list applied in: ${homes.join(', ')}`]),
    ...(neverWritable.length === 0 ? [] : [`never writable: ${neverWritable.join(', ')}`]),
    ...(hidden.length === 0 ? [] : [`never visible: ${hidden.join(', ')}`]),
    `processes: ${job.activeProcessLimit === 1 ? 'the command only' : `at most ${job.activeProcessLimit}`}`,
    `memory: ${job.processMemoryLimit === null ? 'no limit' : `${caps.maxMemoryMb} MiB per process`}`,
    `cwd: ${path.resolve(cwd)}`,
  ];
  return {
    driver: 'windows',
    summary,
    tiers: options.tiers,
    network,
    capabilitySids,
    grants,
    writableRoots,
    protected: { existing, stubs, fileStubs, homes, neverWritable, hidden, parents },
    job,
  };
}

/** Resolves host names to addresses (injectable for tests). */
export type HostResolver = (name: string) => Promise<readonly string[]>;

/**
 * The readable refusal for `allowHosts`: Windows can only filter by address (WFP, which needs an
 * administrator), so say exactly which addresses the allowlist would need.
 */
export async function explainAllowHosts(hosts: readonly string[], resolve: HostResolver): Promise<string> {
  const lines = await Promise.all(
    hosts.map(async (entry) => {
      const host = entry.replace(/^\[(.*)\](?::\d+)?$/, '$1').replace(/^([^:]+):\d+$/, '$1');
      if (isIP(host) !== 0) return `${entry} → ${host}`;
      if (host.startsWith('*.')) return `${entry} → cannot be resolved in advance (a wildcard)`;
      try {
        const addresses = await resolve(host);
        return `${entry} → ${addresses.length === 0 ? 'no addresses' : addresses.join(', ')}`;
      } catch (error) {
        return `${entry} → does not resolve (${(error as Error).message})`;
      }
    }),
  );
  return `Windows can restrict the network only by address, through the Windows Filtering Platform, which needs administrator rights and is out of scope; allowHosts would need: ${lines.join('; ')}. Use network none, or allowAll.`;
}
