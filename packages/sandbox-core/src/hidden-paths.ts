/**
 * Paths no grant may reach into: the vault, every session's HOME, the audit log (and its directory when
 * it is the log's own) and the sandbox's state directory. A grant that would show any of them is hidden by
 * each driver's plan where the grant contains them; a grant *inside* one (or equal to it) cannot be hidden
 * from itself, so it is refused outright, before approval is asked, by the pipeline and by every driver's
 * plan builder alike (`refuseHiddenGrants`).
 */
import { realpathSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { SandboxCapabilities } from './capabilities.js';
import { CapabilityDeniedError, InvalidInputError } from './errors.js';

/** A path no grant may lie in, and what it is (for the error that names it). */
export interface HiddenPath {
  readonly path: string;
  /** In words: `the vault`, `every session's HOME`, … */
  readonly what: string;
}

/** What the hidden paths of a driver are made of. */
export interface HiddenPathOptions {
  /** The host user's home directory (an audit log directly in it, or above it, hides only the file). */
  readonly home: string;
  /** Other home directories of the host, shared places in the same way. Default none. */
  readonly otherHomes?: readonly string[] | undefined;
  /** The vault (`defaultVaultPaths`: `~/.aleph/data`, `~/.aleph/.shared_token`). */
  readonly vaultPaths: readonly string[];
  /** Where every session's HOME lives (`~/.aleph/homes`), when the driver has session homes. */
  readonly homeRoot?: string | undefined;
  /** The audit JSONL file, when one is configured. */
  readonly auditLogPath?: string | undefined;
  /** The driver's state directory (`~/.aleph/run`), when it has one. */
  readonly stateDir?: string | undefined;
}

/**
 * The hidden paths of a driver. The audit log's directory counts as the log's own (the log's rotations and
 * siblings live there) unless it is a place everything shares: a home directory or one above it, a
 * filesystem root, or the temporary directory; there only the file is hidden.
 *
 * @example
 * ```ts
 * hiddenPaths({ home: '/home/u', vaultPaths: defaultVaultPaths('/home/u'), homeRoot: '/home/u/.aleph/homes' })
 * // [{ path: '/home/u/.aleph/data', what: 'the vault' }, …, { path: '/home/u/.aleph/homes', what: "every session's HOME" }]
 * ```
 */
export function hiddenPaths(options: HiddenPathOptions): HiddenPath[] {
  const out: HiddenPath[] = options.vaultPaths.map((p) => ({ path: path.resolve(p), what: 'the vault' }));
  if (options.homeRoot !== undefined)
    out.push({ path: path.resolve(options.homeRoot), what: "every session's HOME" });
  if (options.auditLogPath !== undefined) {
    const log = path.resolve(options.auditLogPath);
    const dir = path.dirname(log);
    out.push(
      isSharedPlace(dir, [options.home, ...(options.otherHomes ?? [])])
        ? { path: log, what: 'the audit log' }
        : { path: dir, what: "the audit log's directory" },
    );
  }
  if (options.stateDir !== undefined)
    out.push({ path: path.resolve(options.stateDir), what: "the sandbox's state directory" });
  return out;
}

/** A home directory or above one, a filesystem root, or the temporary directory. */
function isSharedPlace(dir: string, homes: readonly string[]): boolean {
  const shared = [os.tmpdir(), '/tmp', '/var/tmp'].map((p) => path.resolve(p));
  return (
    dir === path.parse(dir).root ||
    homes.some((home) => within(path.resolve(home), dir, false)) ||
    shared.includes(dir)
  );
}

/** Whether the pipeline compares grants and hidden paths without case: macOS and Windows filesystems
 * ignore case by default. */
export const HIDDEN_PATHS_FOLD_CASE = process.platform === 'darwin' || process.platform === 'win32';

/** How grants and hidden paths are compared. */
export interface HiddenGrantCheckOptions {
  /**
   * The form paths are compared in. Default: the real path of the deepest existing ancestor, plus the
   * rest (what the pipeline resolves grants to), so a symlink on either side changes nothing.
   */
  readonly canonical?: (p: string) => string;
  /** Compare without case (macOS and Windows filesystems). Default false. */
  readonly ignoreCase?: boolean;
}

/** A grant that lies in a hidden path. */
export interface HiddenGrant {
  /** `capabilities.fsWrite[0]`, … (or the prefix given). */
  readonly field: string;
  readonly value: string;
  readonly hidden: HiddenPath;
}

/**
 * The first grant of `caps` (fsRead, then fsWrite) that lies inside, or is, one of `hidden`; `undefined`
 * when none does.
 */
export function findHiddenGrant(
  caps: Pick<SandboxCapabilities, 'fsRead' | 'fsWrite'>,
  hidden: readonly HiddenPath[],
  options: HiddenGrantCheckOptions & { readonly field?: string } = {},
): HiddenGrant | undefined {
  if (hidden.length === 0 || (caps.fsRead.length === 0 && caps.fsWrite.length === 0)) return undefined;
  const canonical = options.canonical ?? canonicalPath;
  const ignoreCase = options.ignoreCase ?? false;
  const resolved = hidden.map((h) => ({ h, p: canonical(h.path) }));
  for (const kind of ['fsRead', 'fsWrite'] as const) {
    for (const [i, value] of caps[kind].entries()) {
      const grant = canonical(value);
      const found = resolved.find(
        ({ h, p }) => within(grant, p, ignoreCase) || within(grant, h.path, ignoreCase),
      );
      if (found !== undefined)
        return { field: `${options.field ?? 'capabilities'}.${kind}[${i}]`, value, hidden: found.h };
    }
  }
  return undefined;
}

/** The sentence that refuses `grant`: the grant, the hidden path and the fix. */
export function hiddenGrantReason(grant: HiddenGrant): string {
  return `${grant.field} ${JSON.stringify(grant.value)} lies inside ${grant.hidden.what} (${grant.hidden.path}), which no command may see whatever is approved; grant a path outside it`;
}

/**
 * Refuses a command whose grants reach into a hidden path. The pipeline calls it before approval is asked
 * (an approval, a cached grant or the config cannot make such a grant), and each driver's plan builder
 * again.
 *
 * @throws {CapabilityDeniedError} `ALEPH_CAPABILITY_DENIED` naming the grant (field and value), the
 *   hidden path and the fix.
 */
export function refuseHiddenGrants(
  caps: Pick<SandboxCapabilities, 'fsRead' | 'fsWrite'>,
  hidden: readonly HiddenPath[],
  options: HiddenGrantCheckOptions = {},
): void {
  const grant = findHiddenGrant(caps, hidden, options);
  if (grant === undefined) return;
  throw new CapabilityDeniedError(hiddenGrantReason(grant), {
    details: {
      field: grant.field,
      value: grant.value,
      hiddenPath: grant.hidden.path,
      hidden: grant.hidden.what,
      fix: 'grant a path outside it',
    },
  });
}

/**
 * Refuses a session baseline (the config's grants) that reaches into a hidden path, when the sandbox is
 * built.
 *
 * @throws {InvalidInputError} `ALEPH_CONFIG_INVALID` naming `baseline.fsRead[i]` / `baseline.fsWrite[i]`.
 */
export function refuseHiddenBaseline(
  baseline: Pick<SandboxCapabilities, 'fsRead' | 'fsWrite'>,
  hidden: readonly HiddenPath[],
  options: HiddenGrantCheckOptions = {},
): void {
  const grant = findHiddenGrant(baseline, hidden, { ...options, field: 'baseline' });
  if (grant === undefined) return;
  throw new InvalidInputError(
    'ALEPH_CONFIG_INVALID',
    grant.field,
    grant.value,
    `lies inside ${grant.hidden.what} (${grant.hidden.path}), which no command may see`,
    'remove it from the baseline or grant a path outside it',
    { details: { reason: hiddenGrantReason(grant) } },
  );
}

/**
 * `child` is `parent` or lies beneath it (whole components, `/` or this platform's separator: a macOS plan
 * is built and tested on every platform).
 */
function within(child: string, parent: string, ignoreCase: boolean): boolean {
  const c = ignoreCase ? child.toLowerCase() : child;
  const p = ignoreCase ? parent.toLowerCase() : parent;
  if (c === p) return true;
  return [...new Set(['/', path.sep])].some((sep) => c.startsWith(p.endsWith(sep) ? p : p + sep));
}

/** The real path of `p`'s deepest existing ancestor, with the rest of `p` appended. */
export function canonicalPath(p: string): string {
  let current = path.resolve(p);
  const rest: string[] = [];
  for (;;) {
    try {
      const real = realpathSync.native(current);
      return rest.length === 0 ? real : path.join(real, ...rest.reverse());
    } catch {
      const parent = path.dirname(current);
      if (parent === current) return path.resolve(p);
      rest.push(path.basename(current));
      current = parent;
    }
  }
}
