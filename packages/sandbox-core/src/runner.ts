import { monotonicMs } from './internal/clock.js';
import { killRequestOf } from './kill-request.js';
import type { KillReason } from './output.js';
import { type ProcessStarter, startWithNode } from './process-start.js';
import { killTree, signalGroup, trackGroup, untrackGroup } from './process-tree.js';
import { armRunKiller } from './run-kill.js';
import { drainWhenEnded, forwardOutput } from './run-output.js';
import { feedStdin, isStreamedStdin, type StdinSource } from './stdin-feed.js';

/**
 * Receives the live output of a command, one chunk at a time. Returning a promise pauses that stream
 * until it settles: the pipe is not read meanwhile, so a command that keeps writing blocks, and nothing
 * piles up in memory while the consumer (a slow socket, a terminal, a stalled `| less`) catches up.
 * Nothing is dropped by pausing; the wall-clock timeout still runs.
 *
 * A promise that rejects ends the streaming of that stream to this callback (the output budget still
 * captures it). Once the run is killed (timeout or abort), what is left in the pipes is handed over
 * without waiting (at most `DRAIN_BYTES` more to each callback), so a consumer that never drains cannot
 * keep a killed command alive, nor grow without bound. During a graceful stop's grace the pause holds.
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
  /**
   * Written to stdin, which is then closed; or streamed chunk by chunk with backpressure and closed when
   * the source ends (see {@link StdinSource}). Without it, stdin is `/dev/null`.
   */
  readonly stdin?: StdinSource;
  /** Wall-clock limit; when it fires the whole process tree is killed with SIGKILL. */
  readonly timeoutMs: number;
  /** Output budget shared by stdout (first half, rounded up) and stderr (second half). */
  readonly maxOutputBytes: number;
  /**
   * Aborting it kills the whole tree (`killedBy: 'abort'`). When its reason is a `KillRequest`
   * (`createKillRequest`), the kill is reported as `killedBy: 'kill'`, and a `SIGTERM`/`SIGINT` request
   * first sends that signal to every process of the tree, killing what is left after its grace.
   */
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
   * it has not exited `graceMs` later. A soft kill (`SIGTERM`/`SIGINT` from a `KillRequest`) skips the
   * supervisor and the processes named in `relays` (its own helpers, by `/proc/PID/comm`), whose death
   * would end the tree at once.
   */
  readonly gracefulStop?: {
    readonly signal: NodeJS.Signals;
    readonly graceMs: number;
    readonly relays?: readonly string[];
  };
  /** What starts the process; by default this Node process forks (`child_process.spawn`). */
  readonly starter?: ProcessStarter;
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

/** The result of a run whose signal was aborted before it started: nothing ran. */
function abortedBeforeStart(signal: AbortSignal): BoundedRunResult {
  return {
    exitCode: null,
    signal: null,
    stdout: new Uint8Array(0),
    stderr: new Uint8Array(0),
    stdoutTruncated: false,
    stderrTruncated: false,
    timedOut: false,
    killedBy: killRequestOf(signal.reason) === undefined ? 'abort' : 'kill',
    durationMs: 0,
    pid: 0,
  };
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
  if (options.signal?.aborted) return abortedBeforeStart(options.signal);
  const streamed = isStreamedStdin(options.stdin) ? options.stdin : undefined;
  const stdinData =
    options.stdin === undefined || streamed !== undefined
      ? undefined
      : typeof options.stdin === 'string'
        ? Buffer.from(options.stdin, 'utf8')
        : (options.stdin as Uint8Array);
  const subprocess = await (options.starter ?? startWithNode)({
    file: options.file,
    args: options.args,
    env: options.env,
    ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
    ...(options.uid === undefined ? {} : { uid: options.uid }),
    ...(options.gid === undefined ? {} : { gid: options.gid }),
    stdin: options.stdin !== undefined,
    extraFds: extra,
  });
  const pid = subprocess.pid;
  trackGroup(pid, options.gracefulStop?.signal);

  let exitCode: number | null = null;
  let exitSignal: string | null = null;
  const pipeInodes = new Set<string>(subprocess.outputInodes);
  const exited = subprocess.exit.then((status) => {
    exitCode = status.code;
    exitSignal = status.signal;
    // Whatever the program left behind in its group goes with it (the fork server kills it on reaping).
    if (status.groupKilled !== true) signalGroup(pid, 'SIGKILL');
  });
  const output = forwardOutput(
    subprocess,
    { stdout: stdoutCap, stderr: stderrCap },
    { onStdout: options.onStdout, onStderr: options.onStderr },
  );
  if (subprocess.stdin !== null) {
    subprocess.stdin.on('error', () => {}); // EPIPE: the program did not read it all
    if (streamed === undefined) subprocess.stdin.end(stdinData);
    else void feedStdin(subprocess.stdin, streamed, exited);
  }
  const killer = armRunKiller({
    pid,
    pipeInodes,
    timeoutMs: options.timeoutMs,
    signal: options.signal,
    gracefulStop: options.gracefulStop,
    ...drainWhenEnded(output, exited),
  });

  try {
    await Promise.all([exited, output.ended]);
  } catch (error) {
    // The exit can no longer be known (a fork server died): nothing of the run may outlive it.
    killTree(pid, pipeInodes);
    for (const stream of [subprocess.stdin, subprocess.stdout, subprocess.stderr]) stream?.destroy();
    throw error;
  } finally {
    killer.dispose();
    untrackGroup(pid);
  }
  const killedBy = killer.killedBy;
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
    pid,
  };
}
