// How a run is ended by the sandbox: its timeout, its signal (the caller's abort, or a kill request:
// at once, or SIGTERM/SIGINT to the tree first and the rest after a grace), through its supervisor when
// it has one.
import { type KillRequest, killRequestOf } from './kill-request.js';
import type { KillReason } from './output.js';
import {
  ageMs,
  commOf,
  killTree,
  type SignalledProcess,
  signalPid,
  signalTree,
  startOf,
} from './process-tree.js';

/** What ends a run. */
export interface RunKillerOptions {
  readonly pid: number;
  readonly pipeInodes: ReadonlySet<string>;
  readonly timeoutMs: number;
  readonly signal?: AbortSignal | undefined;
  readonly gracefulStop?:
    | { readonly signal: NodeJS.Signals; readonly graceMs: number; readonly relays?: readonly string[] }
    | undefined;
  /**
   * Called once when the tree is killed outright (SIGKILL): at once without a graceful stop, else when
   * its grace ends; not on a soft signal, so the output keeps its backpressure during a grace.
   */
  readonly onKill: () => void;
  /** Called once when the run starts being ended (a timeout, an abort, a kill request), grace or not. */
  readonly onEnding?: (() => void) | undefined;
}

/** The killer of one run: why it was ended (if it was), and `dispose()` once it has ended. */
export interface RunKiller {
  readonly killedBy: KillReason | null;
  dispose(): void;
}

/** How often a soft signal asked for before the program started looks again (bounded: the grace ends it). */
const SOFT_RETRY_MS = 10;
const MAX_SOFT_TRIES = 1000;
/** How many times (every SOFT_RETRY_MS) the processes sent a soft signal are looked at for one that became another program. */
const EXEC_WATCH_TRIES = 100;
/** Only a process this young when it was signalled is watched: a shell still starting up. */
const EXEC_WATCH_AGE_MS = 2000;

const clampMs = (ms: number) => Math.max(0, Math.min(ms, 2_147_483_647));

/** Arms the timeout and listens to the signal (also one aborted while the process was starting). */
export function armRunKiller(options: RunKillerOptions): RunKiller {
  const { pid, pipeInodes, gracefulStop } = options;
  let killedBy: KillReason | null = null;
  let killing = false;
  let graceTimer: NodeJS.Timeout | undefined;
  let softTimer: NodeJS.Timeout | undefined;
  let retryTimer: NodeJS.Timeout | undefined;
  const kill = (reason: KillReason) => {
    if (killing) return;
    killing = true;
    if (killedBy === null) options.onEnding?.();
    killedBy ??= reason;
    const killNow = () => {
      killTree(pid, pipeInodes);
      options.onKill();
    };
    if (gracefulStop === undefined) killNow();
    else {
      signalPid(pid, gracefulStop.signal);
      graceTimer = setTimeout(killNow, gracefulStop.graceMs);
    }
  };
  // A shell whose handler takes the signal in the instant before it execs the program (`bash -c 'sleep 9'`
  // caught SIGINT, then ran sleep: about 1 in 500 under load here) keeps it from the program. A process that
  // has become another program since it was sent the signal (same PID and start, a new name) gets it
  // again, for a short while after the signal; one that is gone is no longer looked at. Only processes
  // that had just started are watched: one that has run a while and execs from its own handler
  // (`trap 'exec cleanup' INT`) meant to, and its next program is left alone.
  const watchExecs = (sent: ReadonlyMap<number, SignalledProcess>, signal: NodeJS.Signals) => {
    const watched = new Map([...sent].filter(([, p]) => ageMs(p.start) <= EXEC_WATCH_AGE_MS));
    let left = EXEC_WATCH_TRIES;
    const look = () => {
      retryTimer = undefined;
      if (killing) return;
      for (const [p, was] of watched) {
        const name = commOf(p);
        if (name === was.name) continue;
        // A new name: the same process after an exec, or (start time differs) another one with its PID.
        if (name === '' || startOf(p) !== was.start) watched.delete(p);
        else {
          signalPid(p, signal);
          watched.set(p, { name, start: was.start });
        }
      }
      if (watched.size > 0 && --left > 0) retryTimer = setTimeout(look, SOFT_RETRY_MS);
    };
    retryTimer = setTimeout(look, SOFT_RETRY_MS);
  };
  // SIGTERM/SIGINT: the tree gets it first (not its supervisor and relays), the rest goes after the grace.
  // Asked for before the program itself exists (only the supervisor and its relays do, right after the
  // start), the signal is kept and sent once it does, within the grace: an early interrupt is not lost.
  const softKill = (request: KillRequest) => {
    if (killedBy !== null) return;
    killedBy = 'kill';
    options.onEnding?.();
    const skip = { root: gracefulStop !== undefined, names: gracefulStop?.relays ?? [] };
    let tries = 0;
    const attempt = () => {
      retryTimer = undefined;
      if (killing) return;
      const sent = signalTree(pid, pipeInodes, request.signal, skip);
      if (sent.reached) watchExecs(sent.signalled, request.signal);
      else if (++tries < MAX_SOFT_TRIES) retryTimer = setTimeout(attempt, SOFT_RETRY_MS);
    };
    attempt();
    softTimer = setTimeout(() => kill('kill'), clampMs(request.graceMs));
  };
  const timer = setTimeout(() => kill('timeout'), Math.max(1, clampMs(options.timeoutMs)));
  const onAbort = () => {
    const request = killRequestOf(options.signal?.reason);
    if (request === undefined) kill('abort');
    else if (request.signal === 'SIGKILL') kill('kill');
    else softKill(request);
  };
  options.signal?.addEventListener('abort', onAbort, { once: true });
  // Aborted while the process was being started: the listener came too late to hear it.
  if (options.signal?.aborted) onAbort();
  return {
    get killedBy() {
      return killedBy;
    },
    dispose() {
      clearTimeout(timer);
      clearTimeout(graceTimer);
      clearTimeout(softTimer);
      clearTimeout(retryTimer);
      options.signal?.removeEventListener('abort', onAbort);
    },
  };
}
