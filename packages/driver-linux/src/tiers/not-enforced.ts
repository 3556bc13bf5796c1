/** What the limits leave unbounded on this host, one sentence each (`details.notEnforced`, doctor). */
/** What decides which limits the Linux driver cannot hold. */
export interface NotEnforcedFacts {
  /** Memory and process limits go through a delegated cgroup v2 leaf (else rlimits). */
  readonly cgroup: boolean;
  /** The host process runs as root (commands then run as a dedicated sandbox uid). */
  readonly isRoot: boolean;
  /**
   * The uid commands run as: a fixed sandbox uid on a root host, the host user's own otherwise, or
   * `'per-run'` when each running command gets a uid of its own (root host, the default).
   */
  readonly uid: number | 'per-run';
  /** `RLIMIT_FSIZE` in MiB, when one applies. */
  readonly maxFileMb: number | undefined;
  /** A CPU quota was configured. */
  readonly cpuQuota: boolean;
  /** Whether Landlock is available; leave it out when that is not known (the run path does not probe). */
  readonly landlock?: boolean;
  /** The command's user namespace has inotify and fanotify counts of its own (tier 2, `ns-limits.ts`). */
  readonly usernsLimits?: boolean;
  /**
   * The command runs in a user namespace of its own under a non-zero kernel uid (tier 2 on a non-root host):
   * RLIMIT_NPROC counts that namespace's processes only, so each execution has its own budget.
   */
  readonly ownUserNamespace?: boolean;
}

/**
 * Names, one sentence each, what a command can still use without bound under these facts. `probe()`,
 * `aleph-sandbox doctor` and every output's `details.notEnforced` list them, so nothing is left unbounded
 * silently.
 *
 * @example
 * ```ts
 * linuxNotEnforced({ cgroup: false, isRoot: true, uid: 65533, maxFileMb: undefined, cpuQuota: false })
 * // ['limit.memory: …', 'limit.memory (memfd, SysV shm): …', …]
 * ```
 */
export function linuxNotEnforced(facts: NotEnforcedFacts): string[] {
  const out: string[] = [];
  const eachFile =
    facts.maxFileMb === undefined
      ? 'a single memfd or file has no size limit (set max_file_mb)'
      : `a single memfd or file holds at most ${facts.maxFileMb} MiB (RLIMIT_FSIZE)`;
  if (!facts.cgroup) {
    out.push(
      'limit.memory: without a delegated cgroup v2, maxMemoryMb is RLIMIT_AS of each process, not a total for the execution (up to max_pids times it)',
      `limit.memory (memfd, SysV shm): memfd_create and SysV shared memory are not counted by RLIMIT_AS; ${eachFile}, and their number is bounded only by open files × processes`,
      ...(facts.uid === 'per-run' || facts.ownUserNamespace === true
        ? []
        : [
            'limit.pids: RLIMIT_NPROC counts every process of the uid, so executions running at the same time share one budget',
          ]),
    );
    if (facts.cpuQuota)
      out.push('limit.cpu: cpu_quota_percent needs a delegated cgroup v2 and is not applied');
  } else if (facts.maxFileMb === undefined) {
    out.push(
      'limit.file-size: a single file in the workspace or a write grant has no size limit (set max_file_mb)',
    );
  }
  if (facts.uid !== 'per-run') {
    out.push(
      facts.usernsLimits === true
        ? `per-uid limits: pending signals and POSIX message queues are counted per uid, and every execution runs as uid ${facts.uid}${facts.isRoot ? '' : ' like the host user itself'}, so they are shared; inotify and fanotify are bounded in each command's user namespace too, at half the user's, so one command cannot use them up (commands running at once can)`
        : `per-uid limits: inotify instances and watches, pending signals and POSIX message queues are counted per uid, and every execution runs as uid ${facts.uid}${facts.isRoot ? '' : ' like the host user itself'}, so they are shared`,
    );
  }
  out.push(
    "disk: what a command writes to its workspace, write grants and its session's /tmp (in the state directory) has no quota",
  );
  if (facts.landlock === false && !facts.isRoot) {
    out.push(
      "tmpfs: without Landlock, bubblewrap's own / and /dev are writable tmpfs mounts of the kernel's default size (half of RAM)",
    );
  }
  return out;
}
