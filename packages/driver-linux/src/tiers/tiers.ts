/**
 * The tiers folder: which way commands run on this host and what that leaves open. This file: the Linux
 * enforcement tiers, strongest first, and what each does not enforce (`tierGaps`). The preflight
 * (`select-tier.ts`) runs a real `true` through each candidate and the strongest that works is used;
 * `tier-fixes.ts` says what makes a failed one work, `with-tiers.ts` folds the verdict into the probe,
 * `not-enforced.ts` names what the limits leave unbounded and `gap-fixes.ts` what closes each gap.
 */

import { pidMaxBounds, pidMaxFor, RESERVED_PIDS } from '../profile/ns-limits.js';

/** Which way a command runs. */
export type LinuxTierId = 'namespaces' | 'user-namespace' | 'direct';

/** A tier's number (1 strongest) — `minimum_tier` compares these. */
export type LinuxTierNumber = 1 | 2 | 3;

export interface LinuxTier {
  readonly id: LinuxTierId;
  readonly number: LinuxTierNumber;
  /** In words, for doctor and the profile. */
  readonly label: string;
}

export const LINUX_TIERS: readonly LinuxTier[] = [
  {
    id: 'namespaces',
    number: 1,
    label:
      'tier 1: bubblewrap namespaces, run as root; the helper drops to a uid of its own, with idmapped user paths',
  },
  {
    id: 'user-namespace',
    number: 2,
    label: 'tier 2: bubblewrap inside a user namespace',
  },
  {
    id: 'direct',
    number: 3,
    label: 'tier 3: no namespaces; the helper alone applies Landlock, seccomp and the limits',
  },
];

export function linuxTier(id: LinuxTierId): LinuxTier {
  return LINUX_TIERS.find((t) => t.id === id) as LinuxTier;
}

/**
 * The tiers to try on this host, strongest first, none weaker than `minimumTier`. Tier 1 runs bwrap as
 * root (it needs `CAP_SYS_ADMIN`); a non-root host starts at tier 2, which is what it always used.
 */
export function candidateTiers(isRoot: boolean, minimumTier: LinuxTierNumber): LinuxTierId[] {
  return LINUX_TIERS.filter((t) => (isRoot || t.number > 1) && t.number <= minimumTier).map((t) => t.id);
}

/** What a tier's gaps depend on. */
export interface TierGapContext {
  readonly isRoot: boolean;
  /** A delegated cgroup v2 limits the processes (else RLIMIT_NPROC, which does not bind uid 0). */
  readonly cgroup: boolean;
  readonly landlockAbi: number;
  /** Tier 3 on a root host: the fixed uid the helper switches to (`sandboxUid`), if one is configured. */
  readonly directUid: number | undefined;
  /**
   * The helper can give the sandbox's PID namespace a pid_max of its own (Linux 6.14+, the helper's
   * `--probe`): tier 2 then bounds its processes whatever their uid.
   */
  readonly pidNamespaceLimit: boolean;
  /** The driver's `maxPids`, named in tier 2's `limit.pids (uid 0)` (default 200). */
  readonly maxPids?: number;
  /** Tier 2 with this host's /proc, bound read-only (a fresh procfs is refused here). */
  readonly hostProc?: boolean;
  /** Tier 2 in user and network namespaces its launcher makes (newer gVisor: `ProfileInputs.outerNamespaces`). */
  readonly outerNamespaces?: boolean;
}

/**
 * What `tier` does not enforce here, each entry `name: sentence`. The name is stable: tests skip an escape
 * test only where the tier declares its gap by that name.
 */
export function tierGaps(tier: LinuxTierId, ctx: TierGapContext): string[] {
  const gaps: string[] = [];
  if (tier !== 'direct')
    gaps.push(
      'absent-protected-paths-during-run: a protected path that is missing when the command starts (.git/hooks, .git/config, .envrc, .claude, … in a writable root) gets no placeholder, so the command can create it, and a host process reading it while the command runs sees what it planted; the launcher sets it aside after the run, as it does with the git control files the command writes anywhere else; one that is there, read-only, but moved during the run by a command of another sandbox (one whose writable root holds it) is meanwhile writable under the name it was moved to: what changed in it is set aside after the run too',
    );
  const keepsRoot =
    ctx.isRoot && (tier === 'user-namespace' || (tier === 'direct' && ctx.directUid === undefined));
  if (tier === 'direct') {
    gaps.push(
      'host-processes: no PID namespace: host processes are visible in /proc' +
        (ctx.landlockAbi >= 6
          ? ' (signalling them is refused by Landlock scoping)'
          : ', and without Landlock ABI 6 the command can signal processes of its uid'),
      "host-tmp: /tmp is the host's, so it is not granted; TMPDIR is a private directory of the session",
      'dev-shm: /dev/shm is not available (POSIX shared memory and semaphores fail); System V IPC is refused',
      `host-network: no network namespace: with network none no socket can be made (no loopback server of the command's own); with allowHosts only TCP connects to the proxy's port${ctx.landlockAbi >= 4 ? ' (Landlock)' : ' — refused: it needs Landlock ABI 4'}; allowAll is the host's network`,
      "transparent-egress: no network namespace of the command's own: no resolver inside and no transparent egress, so with allowHosts only clients that use the proxy variables reach the allowed hosts (Node's fetch and many Go, Java and Rust clients do not, nor a name looked up first with getent or dig), and no port can be published",
      'protected-paths-during-run: no read-only mounts: .git/hooks, .git/config, .aleph and the other protected paths inside a writable root are writable while the command runs (Landlock cannot exempt a sub-path of a granted one); after it the launcher renames aside what the command created or changed there and puts the originals back from a snapshot taken before the run, so a host process reading them while the command runs can still see what it planted',
      'root-listing: directories outside the grants cannot be listed, / included (`ls /` fails): a Landlock right to list / would cover every directory of the host',
    );
  }
  if (tier === 'user-namespace' && ctx.hostProc === true)
    gaps.push(
      "host-proc: the kernel refuses a fresh /proc here (the container runtime masks parts of it), so /proc is the host's, bound read-only: the command lists the host's processes and their command lines; their memory, environment and descriptors are refused by Landlock, and signals by the PID namespace, where they have no pid",
    );
  const outer = tier === 'user-namespace' && ctx.outerNamespaces === true;
  if (outer)
    gaps.push(
      'landlock: gVisor has no Landlock, so tier 2 confines the filesystem with its mounts alone: nothing backs them up, and the masked files (/etc/shadow, …) read as empty rather than being refused',
    );
  if (keepsRoot) {
    const shown = outer
      ? ' (uid 0 of its own user namespace too)'
      : ' (shown as another uid in its user namespace)';
    gaps.push(
      `root-file-identity: the command runs as uid 0 with no capabilities${tier === 'user-namespace' ? shown : ''}: root-owned files it can see are readable and writable by their mode whatever it is, and the files it makes are root's`,
    );
    if (!ctx.cgroup) gaps.push(...rootProcessGaps(tier, ctx));
  }
  return gaps;
}

/**
 * The process limit of a command keeping uid 0 without a delegated cgroup: RLIMIT_NPROC does not bind it.
 * Tier 2 bounds its PID namespace with pid_max where the kernel allows: max_pids at a time once the PIDs
 * have wrapped, but more before (named as a limit, `limit.pids (uid 0)`); tier 3 has no PID namespace.
 */
function rootProcessGaps(tier: LinuxTierId, ctx: TierGapContext): string[] {
  if (tier === 'user-namespace' && ctx.pidNamespaceLimit) {
    const maxPids = ctx.maxPids ?? 200;
    const pidMax = pidMaxFor(maxPids);
    return [
      `limit.pids (uid 0): RLIMIT_NPROC does not bind uid 0, so the PID namespace's pid_max (${pidMax}) bounds the command instead: up to ${pidMaxBounds(pidMax).atMost} processes and threads at once before its PIDs first wrap at ${RESERVED_PIDS}, then max_pids (${maxPids}) and those of the first ${RESERVED_PIDS} still running`,
    ];
  }
  return [
    `process-limit: RLIMIT_NPROC does not bind uid 0, and no delegated cgroup v2 is here${tier === 'user-namespace' ? ', nor a per-namespace pid_max (Linux 6.14+)' : ' (and tier 3 has no PID namespace)'}: the number of processes is not limited`,
  ];
}

/** Only the names of the gaps (`host-tmp`, …). */
export function gapNames(gaps: readonly string[]): string[] {
  return gaps.map((g) => g.slice(0, g.indexOf(':')));
}
