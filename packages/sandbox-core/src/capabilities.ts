import { BlockList, isIPv4, isIPv6 } from 'node:net';
import path from 'node:path';
import { z } from 'zod';
import { type CidrEntry, HostEntrySchema, parseCidrEntry } from './host-patterns.js';

/**
 * What network a command may reach.
 * - `none`: nothing (loopback inside its own namespace at most).
 * - `allowHosts`: only the listed hosts, through the managed proxy. Entries are `name`, `*.suffix`
 *   (strict subdomains), IP literals and CIDR ranges (`10.0.0.0/8`, `2001:db8::/32`), each with an
 *   optional `:port`. A CIDR entry is the explicit permission that lets a private range through.
 * - `allowAll`: the host's network, unfiltered.
 */
export type NetworkPolicy =
  | { readonly kind: 'none' }
  | { readonly kind: 'allowAll' }
  | { readonly kind: 'allowHosts'; readonly hosts: readonly string[] };

/**
 * What a command may do. The workspace baseline is {@link strictCapabilities}: no filesystem access
 * outside the session's cwd (which drivers grant read-write automatically), no network, no subprocesses.
 */
export interface SandboxCapabilities {
  /** Absolute paths the command may read (and execute from). */
  readonly fsRead: readonly string[];
  /** Absolute paths the command may read and write. */
  readonly fsWrite: readonly string[];
  readonly network: NetworkPolicy;
  /** Whether the command may create processes (fork/vfork/clone without CLONE_THREAD). */
  readonly spawnSubprocess: boolean;
  /** Memory ceiling in MiB (cgroup `memory.max`, or `RLIMIT_AS` as fallback). */
  readonly maxMemoryMb?: number;
  /**
   * Largest file the command may write, in MiB (`RLIMIT_FSIZE`): writing past it fails with `EFBIG`, or
   * kills the writer with `SIGXFSZ` unless it ignores that signal. It bounds every single file, on disk,
   * on a tmpfs or in a memfd.
   */
  readonly maxFileMb?: number;
  /** Wall-clock timeout in seconds, below the configured default. */
  readonly timeoutSecs?: number;
  /**
   * Loopback ports of the command's own network that are reachable on the host's loopback
   * (`127.0.0.1:PORT`) while it runs (`aleph-sandbox run --publish 3000`): a dev server an agent starts,
   * shown to the user or to a browser test on the host. Closed when the run ends. Default none.
   */
  readonly publishPorts?: readonly number[];
}

const NUL = '\u0000';

const AbsolutePathSchema = z
  .string()
  .min(1, { message: 'is empty; use an absolute path such as /data/project' })
  .refine((p) => !p.includes(NUL), { message: 'contains a NUL byte; remove it' })
  .refine((p) => path.isAbsolute(p), {
    message: 'is not absolute; use an absolute path such as /data/project',
  });

/** Zod schema of {@link NetworkPolicy}. */
export const NetworkPolicySchema = z.discriminatedUnion(
  'kind',
  [
    z.object({ kind: z.literal('none') }).strict(),
    z.object({ kind: z.literal('allowAll') }).strict(),
    z.object({ kind: z.literal('allowHosts'), hosts: z.array(HostEntrySchema) }).strict(),
  ],
  { error: 'has an unknown kind; use one of "none", "allowHosts" or "allowAll"' },
);

/** Zod schema of {@link SandboxCapabilities}; missing fields default to the strict baseline. */
export const SandboxCapabilitiesSchema = z
  .object({
    fsRead: z.array(AbsolutePathSchema).default([]),
    fsWrite: z.array(AbsolutePathSchema).default([]),
    network: NetworkPolicySchema.default({ kind: 'none' }),
    spawnSubprocess: z.boolean().default(false),
    maxMemoryMb: z
      .number()
      .int({ message: 'must be a whole number of MiB' })
      .positive({ message: 'must be a positive number of MiB, e.g. 512' })
      .optional(),
    maxFileMb: z
      .number()
      .int({ message: 'must be a whole number of MiB' })
      .positive({ message: 'must be a positive number of MiB, e.g. 100' })
      .optional(),
    timeoutSecs: z.number().positive({ message: 'must be a positive number of seconds, e.g. 30' }).optional(),
    publishPorts: z
      .array(
        z
          .number()
          .int({ message: 'must be a whole port number, e.g. 3000' })
          .min(1, { message: 'must be a port from 1 to 65535, e.g. 3000' })
          .max(65535, { message: 'must be a port from 1 to 65535, e.g. 3000' }),
      )
      .max(16, { message: 'publishes more than 16 ports; publish at most 16' })
      .optional(),
  })
  .strict();

/** The input shape accepted where capabilities are parsed: every field optional, strict defaults. */
export interface SandboxCapabilitiesInput {
  readonly fsRead?: readonly string[];
  readonly fsWrite?: readonly string[];
  readonly network?: NetworkPolicy;
  readonly spawnSubprocess?: boolean;
  readonly maxMemoryMb?: number;
  readonly maxFileMb?: number;
  readonly timeoutSecs?: number;
  readonly publishPorts?: readonly number[];
}

/**
 * The workspace baseline: no filesystem access outside the cwd, no network, no subprocess spawn.
 *
 * @example
 * ```ts
 * const caps = { ...strictCapabilities(), spawnSubprocess: true }
 * ```
 */
export function strictCapabilities(): SandboxCapabilities {
  return { fsRead: [], fsWrite: [], network: { kind: 'none' }, spawnSubprocess: false };
}

/** The spec's `SandboxCapabilities::default()`, identical to {@link strictCapabilities}. */
export const DEFAULT_CAPABILITIES: SandboxCapabilities = Object.freeze({
  fsRead: Object.freeze([]) as readonly string[],
  fsWrite: Object.freeze([]) as readonly string[],
  network: Object.freeze({ kind: 'none' }) as NetworkPolicy,
  spawnSubprocess: false,
});

/**
 * True when `child` equals `parent` or lies beneath it, comparing normalised absolute paths on component
 * boundaries: `/a/b` is within `/a`, `/a/bc` is not within `/a/b`.
 */
export function isPathWithin(child: string, parent: string): boolean {
  const c = path.resolve(child);
  const p = path.resolve(parent);
  if (c === p) return true;
  const prefix = p.endsWith(path.sep) ? p : p + path.sep;
  return c.startsWith(prefix);
}

interface HostEntry {
  readonly wildcard: boolean;
  readonly name: string;
  readonly port: number | null;
}

function parseHostEntry(entry: string): HostEntry {
  let rest = entry.trim().toLowerCase();
  const wildcard = rest.startsWith('*.');
  if (wildcard) rest = rest.slice(2);
  let port: number | null = null;
  const bracket = /^\[([^\]]+)\](?::(\d+))?$/u.exec(rest);
  if (bracket) {
    rest = bracket[1] ?? '';
    port = bracket[2] === undefined ? null : Number(bracket[2]);
  } else {
    const m = /^(.*):(\d+)$/u.exec(rest);
    if (m && !(m[1] ?? '').includes(':')) {
      rest = m[1] ?? '';
      port = Number(m[2]);
    }
  }
  if (rest.endsWith('.')) rest = rest.slice(0, -1);
  return { wildcard, name: rest, port };
}

/** An IP literal or CIDR entry as a range (a literal is a /32 or /128), or undefined for a name. */
function rangeOf(entry: string): (CidrEntry & { readonly port: string | undefined }) | undefined {
  const text = entry.trim().toLowerCase();
  const cidr = text.includes('/') ? parseCidrEntry(text) : undefined;
  if (typeof cidr === 'object') return cidr;
  if (cidr !== undefined) return undefined;
  const { name, port, wildcard } = parseHostEntry(text);
  if (wildcard) return undefined;
  const family = isIPv4(name) ? 4 : isIPv6(name) ? 6 : undefined;
  return family === undefined
    ? undefined
    : {
        family,
        address: name,
        prefix: family === 4 ? 32 : 128,
        port: port === null ? undefined : String(port),
      };
}

/** True when the range `r` lies inside `c` (CIDR blocks are aligned: r's address in c and r no wider). */
function isRangeWithin(r: CidrEntry, c: CidrEntry): boolean {
  if (r.family !== c.family || r.prefix < c.prefix) return false;
  const list = new BlockList();
  const type = c.family === 4 ? 'ipv4' : 'ipv6';
  list.addSubnet(c.address, c.prefix, type);
  return list.check(r.address, type);
}

/** True when the host pattern `requested` allows nothing that `ceiling` does not. */
export function isHostEntryWithin(requested: string, ceiling: string): boolean {
  if (requested.includes('/') || ceiling.includes('/')) {
    const rr = rangeOf(requested);
    const cr = rangeOf(ceiling);
    if (rr === undefined || cr === undefined) return false;
    if (cr.port !== undefined && rr.port !== cr.port) return false;
    return isRangeWithin(rr, cr);
  }
  const r = parseHostEntry(requested);
  const c = parseHostEntry(ceiling);
  if (c.port !== null && r.port !== c.port) return false;
  if (!c.wildcard) return !r.wildcard && r.name === c.name;
  if (r.wildcard) return r.name === c.name || r.name.endsWith(`.${c.name}`);
  return r.name.endsWith(`.${c.name}`);
}

const NETWORK_RANK = { none: 0, allowHosts: 1, allowAll: 2 } as const;

/**
 * Lists, in words, every way `requested` exceeds `ceiling`; empty when it is within. Used for approval
 * prompts and denial messages.
 */
export function explainNotWithin(requested: SandboxCapabilities, ceiling: SandboxCapabilities): string[] {
  const reasons: string[] = [];
  const readable = [...ceiling.fsRead, ...ceiling.fsWrite];
  for (const p of requested.fsRead) {
    if (!readable.some((root) => isPathWithin(p, root))) reasons.push(`read access to ${p}`);
  }
  for (const p of requested.fsWrite) {
    if (!ceiling.fsWrite.some((root) => isPathWithin(p, root))) reasons.push(`write access to ${p}`);
  }
  const rn = requested.network;
  const cn = ceiling.network;
  if (NETWORK_RANK[rn.kind] > NETWORK_RANK[cn.kind]) {
    reasons.push(
      rn.kind === 'allowHosts' ? `network access to ${rn.hosts.join(', ')}` : 'unrestricted network access',
    );
  } else if (rn.kind === 'allowHosts' && cn.kind === 'allowHosts') {
    const extra = rn.hosts.filter((h) => !cn.hosts.some((c) => isHostEntryWithin(h, c)));
    if (extra.length > 0) reasons.push(`network access to ${extra.join(', ')}`);
  }
  if (requested.spawnSubprocess && !ceiling.spawnSubprocess) reasons.push('permission to spawn subprocesses');
  const publish = [...new Set(requested.publishPorts ?? [])].filter(
    (p) => !(ceiling.publishPorts ?? []).includes(p),
  );
  if (publish.length > 0)
    reasons.push(
      `publishing ${publish.length === 1 ? 'port' : 'ports'} ${publish.join(', ')} of its network on the host's loopback (127.0.0.1)`,
    );
  if (ceiling.maxMemoryMb !== undefined) {
    if (requested.maxMemoryMb === undefined) {
      reasons.push(`no memory limit (ceiling ${ceiling.maxMemoryMb} MiB)`);
    } else if (requested.maxMemoryMb > ceiling.maxMemoryMb) {
      reasons.push(`${requested.maxMemoryMb} MiB of memory (ceiling ${ceiling.maxMemoryMb} MiB)`);
    }
  }
  if (ceiling.maxFileMb !== undefined) {
    if (requested.maxFileMb === undefined) {
      reasons.push(`no file-size limit (ceiling ${ceiling.maxFileMb} MiB)`);
    } else if (requested.maxFileMb > ceiling.maxFileMb) {
      reasons.push(`files of ${requested.maxFileMb} MiB (ceiling ${ceiling.maxFileMb} MiB)`);
    }
  }
  if (ceiling.timeoutSecs !== undefined) {
    if (requested.timeoutSecs === undefined) {
      reasons.push(`the default timeout (ceiling ${ceiling.timeoutSecs} s)`);
    } else if (requested.timeoutSecs > ceiling.timeoutSecs) {
      reasons.push(`a ${requested.timeoutSecs} s timeout (ceiling ${ceiling.timeoutSecs} s)`);
    }
  }
  return reasons;
}

/**
 * The spec's `is_within`: true when `requested` asks for nothing beyond `ceiling`. Monotonic checks:
 * fsRead ⊆ (fsRead ∪ fsWrite) by path prefix, fsWrite ⊆ fsWrite, network none ⊆ allowHosts ⊆ allowAll
 * (host sets compared pattern by pattern), spawnSubprocess false ⊆ anything, publishPorts ⊆ publishPorts
 * (port sets), and the numeric limits (a
 * request may only ask for less memory, smaller files and a shorter timeout than a ceiling that sets them).
 *
 * Paths are compared lexically; `WorkspaceSandbox` resolves symlinks before it calls this.
 *
 * @example
 * ```ts
 * isWithin({ ...strictCapabilities(), fsRead: ['/data/a'] }, { ...strictCapabilities(), fsRead: ['/data'] }) // true
 * ```
 */
export function isWithin(requested: SandboxCapabilities, ceiling: SandboxCapabilities): boolean {
  return explainNotWithin(requested, ceiling).length === 0;
}

/**
 * Canonical form: paths resolved, deduplicated and sorted; host entries lowercased, deduplicated and
 * sorted; published ports deduplicated and sorted (none: the field is left out). Two capability sets that mean the same thing normalise to deep-equal values.
 */
export function normalizeCapabilities(caps: SandboxCapabilities): SandboxCapabilities {
  const paths = (list: readonly string[]) => [...new Set(list.map((p) => path.resolve(p)))].sort();
  const network: NetworkPolicy =
    caps.network.kind === 'allowHosts'
      ? {
          kind: 'allowHosts',
          hosts: [...new Set(caps.network.hosts.map((h) => h.trim().toLowerCase()))].sort(),
        }
      : { kind: caps.network.kind };
  const out: {
    fsRead: string[];
    fsWrite: string[];
    network: NetworkPolicy;
    spawnSubprocess: boolean;
    maxMemoryMb?: number;
    maxFileMb?: number;
    timeoutSecs?: number;
    publishPorts?: number[];
  } = {
    fsRead: paths(caps.fsRead),
    fsWrite: paths(caps.fsWrite),
    network,
    spawnSubprocess: caps.spawnSubprocess,
  };
  if (caps.maxMemoryMb !== undefined) out.maxMemoryMb = caps.maxMemoryMb;
  if (caps.maxFileMb !== undefined) out.maxFileMb = caps.maxFileMb;
  if (caps.timeoutSecs !== undefined) out.timeoutSecs = caps.timeoutSecs;
  if (caps.publishPorts !== undefined && caps.publishPorts.length > 0)
    out.publishPorts = [...new Set(caps.publishPorts)].sort((a, b) => a - b);
  return out;
}
