/**
 * A plan in words: the `summary` lines `aleph-sandbox profile` prints, one per fact (identity,
 * namespaces, each mount, protected paths, Landlock, seccomp, limits, network). The lines both tiers'
 * plans share are here too.
 */
import type { SandboxCapabilities } from '@aleph/sandbox-core';
import type { ProtectionPlan } from '../mounts/protected-paths.js';
import type { MountOp } from '../mounts/render-mounts.js';
import { BRIDGE_PORT, INNER_HOME } from '../options.js';
import type { SeccompProgram } from '../seccomp/seccomp-program.js';
import { type NamespaceLimits, namespaceLimitsInWords } from './ns-limits.js';
import type { LandlockRule, LinuxProfile, ProfileInputs } from './profile-types.js';

/** Each mount in words. */
export function describeMounts(ops: readonly MountOp[]): string[] {
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

/** `access path; access path; …`. */
export function rulesInWords(rules: readonly LandlockRule[]): string {
  return rules.map((r) => `${r.access} ${r.path}`).join('; ');
}

/** `RLIMIT_NAME=VALUE, …`. */
export function rlimitsInWords(rlimits: Readonly<Record<string, number>>): string {
  return Object.entries(rlimits)
    .map(([k, v]) => `RLIMIT_${k}=${v}`)
    .join(', ');
}

/** The check after the run, in words. */
/** The profile's way of finding changes, for the words. */
export function journalIn(inputs: {
  readonly journal?: boolean | undefined;
  readonly journalKind?: 'journal' | 'watch' | undefined;
}): 'journal' | 'watch' | undefined {
  return inputs.journal === true ? (inputs.journalKind ?? 'journal') : undefined;
}

/** How the check after the run finds what changed, in words: `journal` (a root host), `watch`, or none. */
function changesFoundBy(journal: 'journal' | 'watch' | undefined): string {
  if (journal === 'journal')
    return 'by a change journal of their filesystems (fanotify), so the check costs what the command changed';
  if (journal === 'watch')
    return "by the change watcher's marks, kept between runs (fanotify inode marks), so the check costs what the command changed; a root it cannot vouch for (its first run, a mount or an unreadable directory below it, lost events) is walked completely";
  return 'by a complete walk (no change journal on this host: it costs the size of the tree)';
}

export function afterRunInWords(
  writableRoots: readonly string[],
  journal: 'journal' | 'watch' | undefined,
): string {
  return `after the run: ${writableRoots.join(', ')} checked whole, ${changesFoundBy(journal)}: control files of git directories at any depth (config, config.worktree, commondir, gitdir, hooks, info; all of them for a directory that became a git directory), a .git file or symlink, and protected paths that appeared are moved to the session's quarantine; set-id bits are cleared; symlinks leading out are reported; what cannot be examined is set aside whole`;
}

/** Everything a tier 1–2 summary says. */
export interface NamespaceSummaryFacts {
  readonly tier: string;
  readonly notEnforced: readonly string[];
  readonly identity: LinuxProfile['identity'];
  readonly privileged: boolean;
  readonly mountSummary: readonly string[];
  readonly writableRoots: readonly string[];
  readonly protection: ProtectionPlan;
  readonly homeProtection: ProtectionPlan;
  readonly vaultHidden: readonly string[];
  /** The directories between a writable mount and a hidden path, mounted onto themselves. */
  readonly pinned: readonly string[];
  readonly rules: readonly LandlockRule[];
  readonly seccomp: SeccompProgram;
  readonly rlimits: Readonly<Record<string, number>>;
  readonly nsLimits: NamespaceLimits | undefined;
}

/** The summary of a tier 1–2 plan, the tier and its gaps first. */
export function namespaceSummary(
  net: SandboxCapabilities['network'],
  inputs: ProfileInputs,
  facts: NamespaceSummaryFacts,
): string[] {
  return [
    `tier: ${facts.tier}`,
    ...facts.notEnforced.map((g) => `not enforced: ${g}`),
    `identity: ${identityInWords(facts.identity, inputs)}`,
    `namespaces: mount, pid, ipc, uts, cgroup${net.kind === 'allowAll' ? '' : ', net'}${facts.privileged ? '' : ', user'}; dies with its parent; new session`,
    ...facts.mountSummary,
    ...(inputs.sessionHome === undefined ? [] : [`home: HOME=${INNER_HOME} (from ${inputs.sessionHome})`]),
    ...facts.protection.summary.map((s) => `protected: ${s}`),
    afterRunInWords(facts.writableRoots, journalIn(inputs)),
    ...facts.homeProtection.summary.map((s) => `protected (home): ${s}`),
    ...facts.vaultHidden.map((v) => `vault hidden: ${v}`),
    ...facts.pinned.map(
      (p) =>
        `kept in place: ${p} (a mount point onto itself: no command can rename it from over a hidden path)`,
    ),
    `landlock (${inputs.landlock}): ${rulesInWords(facts.rules)}; abstract unix sockets and signals scoped`,
    ...facts.seccomp.rules.map((r) => `seccomp: ${r}`),
    `limits: ${rlimitsInWords(facts.rlimits)}; processes ≤ ${inputs.maxPids}${inputs.cpuQuotaPercent ? `; CPU ≤ ${inputs.cpuQuotaPercent}% (cgroup)` : ''}`,
    ...namespaceLimitsInWords(facts.nsLimits),
    networkInWords(net),
  ];
}

function identityInWords(identity: LinuxProfile['identity'], inputs: ProfileInputs): string {
  if (identity.mode === 'drop-to-uid')
    return `host is root; the program runs as ${identity.uid === 'per-run' ? `a uid of its own (${identity.range?.[0]}–${identity.range?.[1]}, one per running command)` : `uid ${identity.uid}/gid ${identity.gid}`} with no capabilities; the workspace and write grants are idmapped so their owner appears as that uid`;
  return `user namespace as uid ${identity.uid}${inputs.innerUid !== undefined && inputs.host.isRoot ? ' (uid 0 outside: root-owned files it sees are its own)' : ''}, no capabilities, nested user namespaces disabled`;
}

function networkInWords(net: SandboxCapabilities['network']): string {
  return net.kind === 'none'
    ? 'network: own namespace with loopback only (bind, listen and connect on it work; nothing else is reachable: where the driver runs the managed proxy, every name and connection off it is refused there and recorded)'
    : net.kind === 'allowHosts'
      ? `network: own namespace with loopback only; 127.0.0.1:${BRIDGE_PORT} bridged to the managed proxy allowing ${net.hosts.join(', ')}`
      : 'network: the host network, unfiltered';
}
