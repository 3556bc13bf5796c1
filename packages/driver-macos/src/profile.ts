import nodePath from 'node:path';
import {
  type HiddenPath,
  InvalidInputError,
  refuseHiddenGrants,
  type SandboxCapabilities,
  type SandboxProfile,
} from '@aleph/sandbox-core';
import { DEVICE_NODES, FIRMLINK_NAMES, MACH_SERVICES, RESOLVER_MACH_SERVICES } from './options.js';
import { checkSbpl, SbplParams, sbplString } from './sbpl.js';

/** Everything a profile depends on besides the capabilities. */
export interface MacosProfileInputs {
  /** Readable and executable system directories, canonical (realpath), existing. */
  readonly systemPaths: readonly string[];
  /** Sub-paths kept read-only inside every writable root (`.git/hooks`, `.aleph`, …). */
  readonly protectedPaths: readonly string[];
  /** Paths never readable or writable. */
  readonly vaultPaths: readonly string[];
  /**
   * Home directories of the host (the user's real home, `/Users/*`, `/var/root`), canonical. The
   * {@link MacosProfileInputs.homeProtectedPaths} apply inside each one a writable root holds. Default none.
   */
  readonly homes?: readonly string[];
  /** Kept read-only (and impossible to create) in every home a writable root holds. Default none. */
  readonly homeProtectedPaths?: readonly string[];
  /**
   * The host user's real `~/.aleph` (config, compile cache, workspaces): never writable, whatever is
   * granted, except for this session's own workspace when it lies inside.
   */
  readonly alephDir?: string | undefined;
  /** The configured audit JSONL file: never readable or writable. */
  readonly auditLogPath?: string | undefined;
  /**
   * No grant may lie inside one of these (`hiddenPaths` of sandbox-core: the vault, the audit log or its
   * directory). Default: the vault paths and the audit log file.
   */
  readonly hiddenPaths?: readonly HiddenPath[] | undefined;
  /** Maps a path to the form Seatbelt sees: realpath of its deepest existing ancestor, plus the rest. */
  readonly canonical: (p: string) => string;
  /**
   * Marks denials in the unified log: `[a-z0-9-]`. Profiles carry {@link PROFILE_TAG}; each execution
   * swaps in a fresh tag of its own (see {@link forExecution}).
   */
  readonly tag: string;
  /** The private TMPDIR, canonical. Profiles carry a placeholder name; each execution gets its own. */
  readonly scratchDir: string;
  /** The managed proxy's port on 127.0.0.1, for `allowHosts`. */
  readonly proxyPort?: number | undefined;
}

/** The macOS profile: the SBPL text, its `-D` parameters, and the plan in data form. */
export interface MacosProfile extends SandboxProfile {
  readonly driver: 'macos';
  /** The profile text given to `sandbox-exec -p`. Paths appear only as `(param "NAME")`. */
  readonly sbpl: string;
  /** `-D NAME=VALUE` for every path the profile names. */
  readonly params: Readonly<Record<string, string>>;
  readonly tag: string;
  readonly scratchDir: string;
  readonly readRoots: readonly string[];
  readonly writableRoots: readonly string[];
  /** Absolute protected paths (read-only) and the ancestors that may not be renamed or removed. */
  readonly protected: {
    readonly paths: readonly string[];
    readonly ancestors: readonly string[];
    /** The home directories inside writable roots whose home list applies. */
    readonly homes: readonly string[];
    /** The real `~/.aleph`, never writable. */
    readonly alephDir?: string;
  };
  readonly vault: readonly string[];
  readonly network:
    | { readonly mode: 'none' }
    | { readonly mode: 'proxy'; readonly port: number; readonly hosts: readonly string[] }
    | { readonly mode: 'all' };
  readonly spawn: boolean;
  readonly limits: { readonly memoryMb: number | null };
}

// macOS paths, whatever platform builds the profile (the tests run on Linux and Windows too).
const path = nodePath.posix;

const unique = <T>(xs: readonly T[]) => [...new Set(xs)];

/** The log tag a profile carries until an execution swaps in its own. */
export const PROFILE_TAG = 'aleph-per-run';

/** The vault paths and the audit log, when the driver gave no list of its own. */
function defaultHidden(inputs: MacosProfileInputs): HiddenPath[] {
  return [
    ...inputs.vaultPaths.map((p) => ({ path: p, what: 'the vault' })),
    ...(inputs.auditLogPath === undefined ? [] : [{ path: inputs.auditLogPath, what: 'the audit log' }]),
  ];
}

/** True when `child` is `parent` or lies beneath it (component boundaries). */
function isPathWithin(child: string, parent: string): boolean {
  return child === parent || child.startsWith(parent === '/' ? '/' : `${parent}/`);
}

/** Every ancestor directory of `p`, from `/` down, excluding `p`. */
function ancestors(p: string): string[] {
  const out: string[] = [];
  for (let d = path.dirname(p); ; d = path.dirname(d)) {
    out.unshift(d);
    if (d === '/') return out;
  }
}

/**
 * Builds the Seatbelt profile for one execution. Deny by default; every path is a `-D` parameter; every
 * allow rule that could cover a protected, vault or other-session path excludes it with `require-not`,
 * and explicit denies for the same paths close the profile, so the result is the same whichever way
 * Seatbelt orders overlapping rules.
 *
 * @throws {InvalidInputError} when a granted path cannot be used (not absolute).
 * @throws {CapabilityDeniedError} for a grant inside a hidden path (the vault, the audit log's directory).
 */
export function buildMacosProfile(
  caps: SandboxCapabilities,
  cwd: string,
  workspace: string,
  inputs: MacosProfileInputs,
): MacosProfile {
  if (!/^[a-z0-9-]{1,64}$/.test(inputs.tag)) throw new Error(`bad log tag ${JSON.stringify(inputs.tag)}`);
  // A grant inside a hidden path cannot be hidden from itself; macOS filesystems ignore case by default.
  refuseHiddenGrants(caps, inputs.hiddenPaths ?? defaultHidden(inputs), {
    canonical: inputs.canonical,
    ignoreCase: true,
  });
  const canon = (field: string, p: string, i?: number) => {
    if (!path.isAbsolute(p)) {
      throw new InvalidInputError(
        'ALEPH_INVALID_COMMAND',
        i === undefined ? field : `${field}[${i}]`,
        p,
        'is not an absolute path',
        'give an absolute path',
      );
    }
    return inputs.canonical(p);
  };
  const ws = canon('workspace', workspace);
  const wsRoot = path.dirname(ws);
  const fsRead = caps.fsRead.map((p, i) => canon('capabilities.fsRead', p, i));
  const fsWrite = caps.fsWrite.map((p, i) => canon('capabilities.fsWrite', p, i));
  const scratch = canon('scratchDir', inputs.scratchDir);
  const audit = inputs.auditLogPath === undefined ? [] : [inputs.canonical(inputs.auditLogPath)];
  const vault = unique([...inputs.vaultPaths.map((p) => inputs.canonical(p)), ...audit]);
  const alephDir = inputs.alephDir === undefined ? undefined : inputs.canonical(inputs.alephDir);
  const writableRoots = unique([ws, ...fsWrite]);
  const readRoots = unique([...inputs.systemPaths, ...fsRead, ...writableRoots, scratch]);
  const writable = [...writableRoots, scratch];
  /**
   * The directories above `p` that a command could rename or remove (those strictly inside a writable
   * place): moving one would carry `p` to a path no rule names (renaming `.git` takes `.git/hooks` with
   * it; renaming `/Users/dev` under a grant of `/Users` takes `~/.aleph` with it).
   */
  const movableAncestors = (p: string) =>
    ancestors(p).filter((a) => writable.some((r) => isPathWithin(a, r) && a !== r));

  // Protected paths of every writable root, and of every home directory a writable root holds.
  const homes = unique((inputs.homes ?? []).map((h) => inputs.canonical(h))).filter((h) =>
    writableRoots.some((r) => isPathWithin(h, r)),
  );
  const protectedPaths: string[] = [];
  for (const root of writableRoots)
    for (const rel of inputs.protectedPaths) protectedPaths.push(path.join(root, rel));
  const homeProtected: string[] = [];
  for (const home of homes)
    for (const rel of inputs.homeProtectedPaths ?? []) homeProtected.push(path.join(home, rel));
  const protectedAncestors = unique(
    [...protectedPaths, ...homeProtected, ...vault, ...(alephDir === undefined ? [] : [alephDir])].flatMap(
      movableAncestors,
    ),
  );
  protectedPaths.push(...homeProtected);
  // Other sessions' workspaces are hidden when a grant reaches the workspace root.
  const hideOtherSessions = [...readRoots, ...writableRoots].some((r) => isPathWithin(wsRoot, r));

  const params = new SbplParams();
  const P = (prefix: string, p: string) => params.ref(prefix, p);
  const lines: string[] = [];
  const rule = (text: string, comment?: string) => {
    if (comment !== undefined) lines.push(`; ${comment}`);
    lines.push(text);
  };
  const anyOf = (filters: readonly string[]) =>
    filters.length === 1 ? (filters[0] as string) : `(require-any ${filters.join(' ')})`;

  const vaultFilters = vault.map((v) => `(subpath ${P('VAULT', v)})`);
  const hiddenFilter = hideOtherSessions
    ? `(require-all (subpath ${P('WORKSPACE_ROOT', wsRoot)}) (require-not (subpath ${P('WORKSPACE', ws)})))`
    : undefined;
  const invisible = [...vaultFilters, ...(hiddenFilter === undefined ? [] : [hiddenFilter])];
  // A protected directory that holds this session's workspace (`~/.aleph` when `~` is writable) is
  // protected except for the workspace itself.
  const exceptWorkspace = (prefix: string, p: string) =>
    isPathWithin(ws, p) && ws !== p
      ? `(require-all (subpath ${P(prefix, p)}) (require-not (subpath ${P('WORKSPACE', ws)})))`
      : `(subpath ${P(prefix, p)})`;
  const protectedFilters = [
    ...unique(protectedPaths).map((p) => exceptWorkspace('PROTECTED', p)),
    // The real ~/.aleph (config, compile cache, other sessions), whatever is granted.
    ...(alephDir === undefined ? [] : [exceptWorkspace('ALEPH_DIR', alephDir)]),
    ...protectedAncestors.map((a) => `(literal ${P('PROTECTED_PARENT', a)})`),
  ];
  /** `roots`, minus every path in `excluded`. */
  const scoped = (roots: readonly string[], prefix: string, excluded: readonly string[]) => {
    const within = anyOf(roots.map((r) => `(subpath ${P(prefix, r)})`));
    if (excluded.length === 0) return within;
    return `(require-all ${within} ${excluded.map((e) => `(require-not ${e})`).join(' ')})`;
  };

  rule('(version 1)');
  rule(
    `(deny default (with message ${sbplString(inputs.tag)}))`,
    "Everything not allowed below is denied and logged with this run's tag.",
  );

  lines.push('', '; ── processes');
  rule(
    `(allow process-exec* ${scoped(readRoots, 'READ', invisible)})`,
    'Programs may run from readable directories only.',
  );
  if (caps.spawnSubprocess) rule('(allow process-fork)', 'spawnSubprocess: true');
  rule('(allow signal (target same-sandbox))');
  rule('(allow process-info* (target same-sandbox))');
  rule(
    '(allow sysctl-read)',
    'Hardware and kernel facts (CPU count, page size) most runtimes read at start.',
  );

  lines.push('', '; ── system services');
  lines.push('(allow mach-lookup');
  for (const s of MACH_SERVICES) lines.push(`  (global-name ${sbplString(s.name)}) ; ${s.why}`);
  lines.push(')');
  rule(
    `(allow ipc-posix-shm-read-data (ipc-posix-name ${sbplString('apple.shm.notification_center')}))`,
    'notify(3) reads its state from this shared memory segment.',
  );
  rule('(allow user-preference-read)', 'CFPreferences reads; writes stay denied.');

  lines.push('', '; ── files');
  rule(
    `(allow file-read* ${scoped(readRoots, 'READ', invisible)})`,
    'System directories, fsRead, the writable roots, the scratch directory.',
  );
  rule(
    `(allow file-map-executable ${scoped(readRoots, 'READ', invisible)})`,
    'dyld maps libraries and extensions from the same places.',
  );
  const metadata = unique([...readRoots.flatMap(ancestors), ...FIRMLINK_NAMES]).filter(
    (a) => !readRoots.some((r) => isPathWithin(a, r)),
  );
  if (metadata.length > 0) {
    rule(
      `(allow file-read-metadata ${anyOf(metadata.map((a) => `(literal ${P('PARENT', a)})`))})`,
      'stat() on the directories above them (realpath, getcwd) and the /etc, /tmp, /var links.',
    );
  }
  rule(
    `(allow file-write* ${scoped([...writableRoots, scratch], 'WRITE', [...invisible, ...protectedFilters])})`,
    'The workspace, fsWrite and the scratch directory, minus protected paths.',
  );

  lines.push('', '; ── devices and terminals');
  const devices = DEVICE_NODES.map((d) => ({ ...d, param: P('DEVICE', d.path) }));
  rule(`(allow file-read* ${anyOf(devices.map((d) => `(literal ${d.param})`))})`);
  rule(
    `(allow file-write-data ${anyOf(devices.filter((d) => d.access === 'read-write').map((d) => `(literal ${d.param})`))})`,
  );
  const ttys = `(prefix ${P('DEVICE_PREFIX', '/dev/ttys')})`;
  const ptmx = `(literal ${P('DEVICE', '/dev/ptmx')})`;
  const tty = `(literal ${P('DEVICE', '/dev/tty')})`;
  rule(
    `(allow file-read* file-write-data file-ioctl (require-any ${ptmx} ${ttys} ${tty}))`,
    'Pseudo-terminals.',
  );
  rule('(allow pseudo-tty)');
  rule(
    `(allow file-read* file-write-data (subpath ${P('DEVICE_DIR', '/dev/fd')}))`,
    '/dev/fd/N and /dev/stdin for shells.',
  );

  lines.push('', '; ── network');
  let network: MacosProfile['network'];
  if (caps.network.kind === 'none') {
    network = { mode: 'none' };
    lines.push('; none: no socket may connect anywhere.');
  } else if (caps.network.kind === 'allowHosts') {
    const port = inputs.proxyPort;
    if (port === undefined || !Number.isInteger(port) || port < 1 || port > 65535) {
      throw new Error('an allowHosts profile needs the managed proxy port');
    }
    network = { mode: 'proxy', port, hosts: caps.network.hosts };
    rule(
      `(allow network-outbound (remote ip ${sbplString(`localhost:${port}`)}))`,
      `allowHosts: only the managed proxy on 127.0.0.1:${port}, which enforces ${caps.network.hosts.join(', ') || 'an empty allowlist'}.`,
    );
  } else {
    network = { mode: 'all' };
    rule('(allow network*)', 'allowAll');
    rule('(allow system-socket)');
    lines.push('(allow mach-lookup');
    for (const s of RESOLVER_MACH_SERVICES) lines.push(`  (global-name ${sbplString(s.name)}) ; ${s.why}`);
    lines.push(')');
  }

  lines.push('', '; ── never, whatever is granted above');
  if (protectedFilters.length > 0)
    rule(
      `(deny file-write* ${protectedFilters.join(' ')})`,
      'Protected paths (writable roots, homes), ~/.aleph, and the parents of those and of the vault.',
    );
  if (invisible.length > 0) {
    rule(
      `(deny file-read* file-write* process-exec* file-map-executable ${invisible.join(' ')})`,
      'Vault paths, the audit log and other sessions.',
    );
  }
  const sbpl = `${lines.join('\n')}\n`;
  const paramTable = params.toObject();
  const problems = checkSbpl(sbpl, paramTable);
  if (problems.length > 0)
    throw new Error(`internal error: generated SBPL fails its check: ${problems.join('; ')}`);

  const summary = [
    'Seatbelt (sandbox-exec), deny by default; denials tagged in the unified log',
    `read + exec: ${readRoots.join(', ')}`,
    `write: ${[...writableRoots, `${scratch} (TMPDIR, this run only)`].join(', ')}`,
    `read-only inside writable roots: ${unique(protectedPaths).join(', ') || 'nothing'}`,
    ...(alephDir === undefined ? [] : [`never writable: ${alephDir} (except this session's workspace)`]),
    `never visible: ${[...vault, ...(hideOtherSessions ? [`other sessions under ${wsRoot}`] : [])].join(', ') || 'nothing'}`,
    network.mode === 'none'
      ? 'network: none'
      : network.mode === 'proxy'
        ? `network: only the managed proxy at 127.0.0.1:${network.port} (${network.hosts.join(', ')})`
        : 'network: all',
    `subprocesses: ${caps.spawnSubprocess ? 'allowed' : 'denied (no process-fork)'}`,
    `memory: ${caps.maxMemoryMb === undefined ? 'no limit' : `RLIMIT_AS ${caps.maxMemoryMb} MiB`}`,
    `cwd: ${inputs.canonical(cwd)}`,
  ];
  return {
    driver: 'macos',
    summary,
    sbpl,
    params: paramTable,
    tag: inputs.tag,
    scratchDir: scratch,
    readRoots,
    writableRoots,
    protected: {
      paths: unique(protectedPaths),
      ancestors: protectedAncestors,
      homes,
      ...(alephDir === undefined ? {} : { alephDir }),
    },
    vault,
    network,
    spawn: caps.spawnSubprocess,
    limits: { memoryMb: caps.maxMemoryMb ?? null },
  };
}

/**
 * The profile text and parameters for one execution: the profile's tag and scratch directory replaced by
 * this execution's (everything else is exactly what `profileFor` returned and `aleph-sandbox profile`
 * prints).
 */
export function forExecution(
  profile: MacosProfile,
  tag: string,
  scratchDir: string,
): { sbpl: string; params: Record<string, string> } {
  if (!/^[a-z0-9-]{1,64}$/.test(tag)) throw new Error(`bad log tag ${JSON.stringify(tag)}`);
  const marker = `(with message ${sbplString(profile.tag)})`;
  const at = profile.sbpl.indexOf(marker);
  if (at < 0 || profile.sbpl.indexOf(marker, at + 1) >= 0)
    throw new Error('the profile has no single log tag');
  const sbpl = profile.sbpl.replace(marker, `(with message ${sbplString(tag)})`);
  const params = Object.fromEntries(
    Object.entries(profile.params).map(([k, v]) => [k, v === profile.scratchDir ? scratchDir : v]),
  );
  return { sbpl, params };
}
