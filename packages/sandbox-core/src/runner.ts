import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { execa } from 'execa';
import { monotonicMs } from './internal/clock.js';
import type { KillReason } from './output.js';

/**
 * Receives the live output of a command, one chunk at a time. Returning a promise pauses that stream
 * until it settles: the pipe is not read meanwhile, so a command that keeps writing blocks, and nothing
 * piles up in memory while the consumer (a slow socket, a terminal, a stalled `| less`) catches up.
 * Nothing is dropped by pausing; the wall-clock timeout still runs.
 *
 * A promise that rejects ends the streaming of that stream to this callback (the output budget still
 * captures it). Once the run is killed (timeout or abort), what is left in the pipes is handed over
 * without waiting, so a consumer that never drains cannot keep a killed command alive.
 *
 * @example
 * ```ts
 * // Forward to a Writable with its backpressure.
 * const onStdout: OutputCallback = (c) =>
 *   socket.write(c) ? undefined : new Promise<void>((r) => socket.once('drain', r))
 * ```
 */
export type OutputCallback = (chunk: Uint8Array) => void | PromiseLike<void>;

/** Options of {@link runBoundedProcess}. */
export interface BoundedRunOptions {
  readonly file: string;
  readonly args: readonly string[];
  /** The complete environment (nothing is inherited). */
  readonly env: Readonly<Record<string, string>>;
  readonly cwd?: string;
  /** Written to stdin, which is then closed. Without it, stdin is `/dev/null`. */
  readonly stdin?: string | Uint8Array;
  /** Wall-clock limit; when it fires the whole process tree is killed with SIGKILL. */
  readonly timeoutMs: number;
  /** Output budget shared by stdout (first half, rounded up) and stderr (second half). */
  readonly maxOutputBytes: number;
  readonly signal?: AbortSignal;
  /**
   * Every stdout chunk, including bytes past the budget (the budget bounds memory, not streaming). A
   * callback that returns a promise applies backpressure: no more of that stream is read until the
   * promise settles, so the command blocks on its next write. See {@link OutputCallback}.
   */
  readonly onStdout?: OutputCallback;
  /** Every stderr chunk, with the same backpressure as {@link BoundedRunOptions.onStdout}. */
  readonly onStderr?: OutputCallback;
  /** Data for extra file descriptors 3, 4, …: each is a pipe the child reads, closed after the data. */
  readonly extraFds?: readonly Uint8Array[];
  /** Run the child as this uid / gid (requires privilege). */
  readonly uid?: number;
  readonly gid?: number;
  /**
   * The child is a trusted supervisor that stops what it started and cleans up when sent `signal`: on a
   * timeout, an abort or this process's exit it gets `signal` first, and the whole tree is killed only if
   * it has not exited `graceMs` later.
   */
  readonly gracefulStop?: { readonly signal: NodeJS.Signals; readonly graceMs: number };
}

/** What {@link runBoundedProcess} observed. */
export interface BoundedRunResult {
  readonly exitCode: number | null;
  readonly signal: string | null;
  readonly stdout: Uint8Array;
  readonly stderr: Uint8Array;
  readonly stdoutTruncated: boolean;
  readonly stderrTruncated: boolean;
  readonly timedOut: boolean;
  /** Set when the sandbox (not the program) ended the run. */
  readonly killedBy: KillReason | null;
  readonly durationMs: number;
  readonly pid: number;
}

/**
 * Keeps the first `limit` bytes of a stream and remembers whether anything was cut. Drivers that read a
 * process's output themselves (Windows) use it with {@link outputBudgets} to match this runner.
 */
export class OutputCapture {
  readonly #chunks: Uint8Array[] = [];
  #size = 0;
  truncated = false;
  constructor(readonly limit: number) {}

  push(chunk: Uint8Array): void {
    const room = this.limit - this.#size;
    if (room <= 0) {
      if (chunk.byteLength > 0) this.truncated = true;
      return;
    }
    if (chunk.byteLength > room) {
      this.#chunks.push(chunk.subarray(0, room));
      this.#size += room;
      this.truncated = true;
    } else {
      this.#chunks.push(chunk);
      this.#size += chunk.byteLength;
    }
  }

  bytes(): Uint8Array {
    if (this.#chunks.length === 1) return this.#chunks[0] as Uint8Array;
    return Buffer.concat(this.#chunks, this.#size);
  }
}

/** How an output budget is split: stdout gets the first half (rounded up), stderr the rest. */
export function outputBudgets(maxOutputBytes: number): { stdout: number; stderr: number } {
  return { stdout: Math.ceil(maxOutputBytes / 2), stderr: Math.floor(maxOutputBytes / 2) };
}

/**
 * Process groups still running, killed if this Node process exits first (a graceful supervisor gets its
 * stop signal instead, and cleans up after this process is gone).
 */
const liveGroups = new Map<number, NodeJS.Signals | undefined>();
let exitHookInstalled = false;
function trackGroup(pid: number, stop: NodeJS.Signals | undefined): void {
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

function signalGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    // ESRCH: the group is already gone.
  }
}

function signalPid(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch {
    // ESRCH or EPERM: gone, or not ours.
  }
}

/**
 * Linux: every process that is a descendant of `root` or holds one of `pipeInodes` open (so a
 * grandchild that called setsid() and kept our stdout is still found).
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
          if (link.startsWith('pipe:[') && pipeInodes.has(link.slice(6, -1))) {
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

function pipeInode(stream: unknown): string | undefined {
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
function killTree(pid: number, pipeInodes: ReadonlySet<string>): void {
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

/**
 * Runs one process with a wall-clock timeout that kills its whole tree, an output budget split between
 * stdout and stderr with truncation reported, optional stdin, and an exact environment. Shared by every
 * driver. A non-zero exit, a signal, a timeout or an abort is reported in the result; only a failure to
 * start the process rejects.
 *
 * The child is the leader of a new session/process group. When it exits, whatever is left of its group
 * is killed too, so nothing it started outlives the run.
 *
 * @throws the spawn error (for example `ENOENT`) when the program cannot be started.
 * @example
 * ```ts
 * const r = await runBoundedProcess({ file: 'ls', args: [], env: { PATH: '/usr/bin:/bin' }, timeoutMs: 5000, maxOutputBytes: 1 << 20 })
 * ```
 */
export async function runBoundedProcess(options: BoundedRunOptions): Promise<BoundedRunResult> {
  const started = monotonicMs();
  const budgets = outputBudgets(options.maxOutputBytes);
  const stdoutCap = new OutputCapture(budgets.stdout);
  const stderrCap = new OutputCapture(budgets.stderr);
  const extra = options.extraFds ?? [];
  if (options.signal?.aborted) {
    return {
      exitCode: null,
      signal: null,
      stdout: new Uint8Array(0),
      stderr: new Uint8Array(0),
      stdoutTruncated: false,
      stderrTruncated: false,
      timedOut: false,
      killedBy: 'abort',
      durationMs: 0,
      pid: 0,
    };
  }
  const stdinOption =
    options.stdin === undefined
      ? 'ignore'
      : typeof options.stdin === 'string'
        ? Buffer.from(options.stdin, 'utf8')
        : options.stdin;
  const subprocess = execa(options.file, [...options.args], {
    stdio: [stdinOption as 'ignore', 'pipe', 'pipe', ...(extra as Uint8Array[] as unknown as 'pipe'[])] as [
      'ignore',
      'pipe',
      'pipe',
    ],
    env: { ...options.env },
    extendEnv: false,
    ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
    ...(options.uid === undefined ? {} : { uid: options.uid }),
    ...(options.gid === undefined ? {} : { gid: options.gid }),
    buffer: false,
    reject: false,
    detached: true,
    cleanup: false,
    stripFinalNewline: false,
    windowsHide: true,
  });

  let spawned = false;
  let exitCode: number | null = null;
  let exitSignal: string | null = null;
  let killedBy: KillReason | null = null;
  const pipeInodes = new Set<string>();

  const onExit = (code: number | null, signal: NodeJS.Signals | null) => {
    exitCode = code;
    exitSignal = signal;
    // Whatever the program left behind in its group goes with it.
    if (subprocess.pid !== undefined) signalGroup(subprocess.pid, 'SIGKILL');
  };
  subprocess.once('spawn', () => {
    spawned = true;
    if (subprocess.pid !== undefined) trackGroup(subprocess.pid, options.gracefulStop?.signal);
  });
  subprocess.once('exit', onExit);

  // Streams paused for a consumer's promise; a kill resumes them all (see OutputCallback).
  const paused = new Set<NodeJS.ReadableStream>();
  let draining = false;
  const forward = (
    stream: NodeJS.ReadableStream | null | undefined,
    capture: OutputCapture,
    callback: OutputCallback | undefined,
  ) => {
    if (!stream) return;
    let live = callback !== undefined;
    stream.on('data', (chunk: Uint8Array) => {
      capture.push(chunk);
      if (!live || callback === undefined) return;
      const pending = callback(chunk) as PromiseLike<void> | undefined;
      if (typeof pending?.then !== 'function') return;
      const resume = () => {
        if (paused.delete(stream)) stream.resume();
      };
      if (!draining) {
        paused.add(stream);
        stream.pause();
      }
      Promise.resolve(pending).then(resume, () => {
        live = false;
        resume();
      });
    });
  };
  forward(subprocess.stdout, stdoutCap, options.onStdout);
  forward(subprocess.stderr, stderrCap, options.onStderr);
  for (const s of [subprocess.stdout, subprocess.stderr]) {
    const inode = pipeInode(s);
    if (inode !== undefined) pipeInodes.add(inode);
  }

  let graceTimer: NodeJS.Timeout | undefined;
  const kill = (reason: KillReason) => {
    if (killedBy !== null) return;
    killedBy = reason;
    const pid = subprocess.pid;
    if (pid === undefined) return;
    if (options.gracefulStop === undefined) killTree(pid, pipeInodes);
    else {
      signalPid(pid, options.gracefulStop.signal);
      graceTimer = setTimeout(() => killTree(pid, pipeInodes), options.gracefulStop.graceMs);
    }
    // The pipes hold at most what was written before the kill: read it without waiting for consumers.
    draining = true;
    for (const stream of paused) stream.resume();
    paused.clear();
  };
  const timer = setTimeout(() => kill('timeout'), Math.max(1, Math.min(options.timeoutMs, 2_147_483_647)));
  const onAbort = () => kill('abort');
  options.signal?.addEventListener('abort', onAbort, { once: true });

  let result: Awaited<typeof subprocess>;
  try {
    result = await subprocess;
  } finally {
    clearTimeout(timer);
    clearTimeout(graceTimer);
    options.signal?.removeEventListener('abort', onAbort);
    if (subprocess.pid !== undefined) liveGroups.delete(subprocess.pid);
  }
  if (!spawned) {
    throw result.cause instanceof Error ? result.cause : new Error(result.message);
  }
  if (exitCode === null && exitSignal === null) {
    exitCode = result.exitCode ?? null;
    exitSignal = result.signal ?? null;
  }
  return {
    exitCode,
    signal: exitSignal,
    stdout: stdoutCap.bytes(),
    stderr: stderrCap.bytes(),
    stdoutTruncated: stdoutCap.truncated,
    stderrTruncated: stderrCap.truncated,
    timedOut: killedBy === 'timeout',
    killedBy,
    durationMs: monotonicMs() - started,
    pid: subprocess.pid ?? 0,
  };
}
