import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

// The process trees runBoundedProcess starts: tracked by process group, and killed as a whole (the group,
// then whatever left it but is still a descendant or holds the run's output open).

/**
 * Process groups still running, killed if this Node process exits first (a graceful supervisor gets its
 * stop signal instead, and cleans up after this process is gone).
 */
const liveGroups = new Map<number, NodeJS.Signals | undefined>();
let exitHookInstalled = false;
export function trackGroup(pid: number, stop: NodeJS.Signals | undefined): void {
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    process.once('exit', () => {
      for (const [pgid, signal] of liveGroups) {
        if (signal === undefined) signalGroup(pgid, 'SIGKILL');
        else signalPid(pgid, signal);
      }
    });
  }
  liveGroups.set(pid, stop);
}

export function untrackGroup(pid: number): void {
  liveGroups.delete(pid);
}

export function signalGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    // ESRCH: the group is already gone.
  }
}

export function signalPid(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch {
    // ESRCH or EPERM: gone, or not ours.
  }
}

/**
 * Linux: every process that is a descendant of `root` or holds one of `pipeInodes` (pipe or socket
 * inodes) open, so a grandchild that called setsid() and kept the run's stdout is still found.
 */
function findStragglers(root: number, pipeInodes: ReadonlySet<string>): number[] {
  if (process.platform !== 'linux') return [];
  const parent = new Map<number, number>();
  const holders = new Set<number>();
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return [];
  }
  for (const name of entries) {
    const pid = Number(name);
    if (!Number.isInteger(pid) || pid <= 1 || pid === process.pid) continue;
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
      const after = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      parent.set(pid, Number(after[1]));
    } catch {
      continue;
    }
    if (pipeInodes.size > 0) {
      try {
        for (const fd of readdirSync(`/proc/${pid}/fd`)) {
          const link = readlinkSync(`/proc/${pid}/fd/${fd}`);
          const inode = /^(?:pipe|socket):\[(\d+)\]$/.exec(link)?.[1];
          if (inode !== undefined && pipeInodes.has(inode)) {
            holders.add(pid);
            break;
          }
        }
      } catch {
        // Not ours to inspect, or gone.
      }
    }
  }
  const out = new Set<number>(holders);
  const children = new Map<number, number[]>();
  for (const [pid, ppid] of parent) {
    const list = children.get(ppid);
    if (list) list.push(pid);
    else children.set(ppid, [pid]);
  }
  const stack = [root];
  while (stack.length > 0) {
    const pid = stack.pop() as number;
    for (const child of children.get(pid) ?? []) {
      if (!out.has(child)) {
        out.add(child);
        stack.push(child);
      }
    }
  }
  out.delete(root);
  return [...out];
}

/** A process as it was when it was sent a signal: the program it ran, and when it started (its identity). */
export interface SignalledProcess {
  readonly name: string;
  readonly start: string;
}

/**
 * Sends `signal` to every process of `pid`'s tree (its group and every straggler) without stopping any:
 * the first step of a soft kill, which lets programs clean up. A trusted supervisor at the root
 * (`skipRoot`) and the processes named in `skipNames` (`/proc/PID/comm`: the supervisor's own helpers,
 * which would take the tree down with them) are left out; off Linux only the group is signalled.
 *
 * @returns whether the signal reached the program itself (`reached`): with the root skipped, a process
 *   that is neither a skipped helper nor a fork of the supervisor not yet turned into another program (one
 *   sharing the root's name). False right after the start, while only the supervisor and its helpers
 *   exist: the caller tries again once the program has started. `signalled`: each process it was sent to,
 *   as it was then (empty off Linux, or when the root was not skipped).
 */
export function signalTree(
  pid: number,
  pipeInodes: ReadonlySet<string>,
  signal: NodeJS.Signals,
  skip: { readonly root: boolean; readonly names: readonly string[] },
): { readonly reached: boolean; readonly signalled: ReadonlyMap<number, SignalledProcess> } {
  const signalled = new Map<number, SignalledProcess>();
  if (!skip.root && process.platform !== 'linux') {
    signalGroup(pid, signal);
    return { reached: true, signalled };
  }
  if (!skip.root) signalGroup(pid, signal);
  const rootName = skip.root ? commOf(pid) : '';
  let reached = !skip.root;
  for (const p of findStragglers(pid, pipeInodes)) {
    const name = commOf(p);
    if (skip.names.length > 0 && skip.names.includes(name)) continue;
    signalPid(p, signal);
    signalled.set(p, { name, start: startOf(p) });
    if (name !== '' && name !== rootName) reached = true;
  }
  return { reached, signalled };
}

/** When a process started (`/proc/PID/stat` field 22, clock ticks since boot): with its PID, its identity. */
export function startOf(pid: number): string {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? '';
  } catch {
    return '';
  }
}

/** How many milliseconds ago a process started, from its {@link startOf}; infinite when unknown. */
export function ageMs(start: string): number {
  const ticks = Number(start);
  if (start === '' || !Number.isFinite(ticks)) return Number.POSITIVE_INFINITY;
  try {
    const uptime = Number(readFileSync('/proc/uptime', 'utf8').split(' ')[0]);
    // /proc/PID/stat counts in USER_HZ, 100 per second on Linux.
    return Number.isFinite(uptime) ? uptime * 1000 - ticks * 10 : Number.POSITIVE_INFINITY;
  } catch {
    return Number.POSITIVE_INFINITY;
  }
}

/** `/proc/PID/comm`: the name of the program a process runs now; empty once it is gone. */
export function commOf(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
  } catch {
    return '';
  }
}

export function pipeInode(stream: unknown): string | undefined {
  const fd = (stream as { _handle?: { fd?: number } } | null)?._handle?.fd;
  if (typeof fd !== 'number' || fd < 0 || process.platform !== 'linux') return undefined;
  try {
    const link = readlinkSync(`/proc/self/fd/${fd}`);
    return link.startsWith('pipe:[') ? link.slice(6, -1) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Kills `pid`'s process group and every straggler: stop them all first (so nothing forks while we look),
 * then SIGKILL.
 */
export function killTree(pid: number, pipeInodes: ReadonlySet<string>): void {
  signalGroup(pid, 'SIGSTOP');
  const seen = new Set<number>();
  for (let round = 0; round < 3; round++) {
    let added = false;
    for (const p of findStragglers(pid, pipeInodes)) {
      if (!seen.has(p)) {
        seen.add(p);
        added = true;
        signalPid(p, 'SIGSTOP');
      }
    }
    if (!added) break;
  }
  signalPid(pid, 'SIGKILL');
  signalGroup(pid, 'SIGKILL');
  for (const p of seen) {
    signalPid(p, 'SIGKILL');
    signalGroup(p, 'SIGKILL');
  }
}
