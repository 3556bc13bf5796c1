// The process handle spawn() returns (SandboxProcess): its streams, its kill controller, and the
// settling of its run.
import { InvalidInputError } from './errors.js';
import { createKillRequest, DEFAULT_KILL_GRACE_MS, type KillSignal } from './kill-request.js';
import type { SandboxOutput } from './output.js';
import { OutputStream, StdinChannel } from './process-streams.js';
import type { SessionId } from './session.js';
import type { KillOptions, SandboxProcess } from './session-api.js';

/** Something running that a session close or a dispose must end. */
export interface Killable {
  kill(): Promise<void>;
}

const KILL_SIGNALS: readonly KillSignal[] = ['SIGKILL', 'SIGTERM', 'SIGINT'];

/**
 * A spawned process: created before its run starts (so the run can feed its streams), then given the
 * run's result promise with {@link ProcessHandle.start}.
 */
export class ProcessHandle implements SandboxProcess {
  readonly sessionId: SessionId;
  readonly stdout: ReadableStream<Uint8Array>;
  readonly stderr: ReadableStream<Uint8Array>;
  readonly stdin: WritableStream<Uint8Array> | null;
  readonly out = new OutputStream();
  readonly err = new OutputStream();
  readonly channel: StdinChannel | undefined;
  readonly #killer = new AbortController();
  #result: Promise<SandboxOutput> | undefined;
  #exited = false;

  constructor(sessionId: SessionId, pipedStdin: boolean) {
    this.sessionId = sessionId;
    this.stdout = this.out.stream;
    this.stderr = this.err.stream;
    this.channel = pipedStdin ? new StdinChannel() : undefined;
    this.stdin = this.channel?.stream ?? null;
  }

  /** The signal the run is killed with (its reason a `KillRequest`). */
  get killSignal(): AbortSignal {
    return this.#killer.signal;
  }

  /** Attaches the run. The streams end when it settles (erroring only on a driver failure). */
  start(result: Promise<SandboxOutput>, onSettled: () => void): void {
    this.#result = result;
    const settle = () => {
      this.#exited = true;
      this.channel?.stop();
      onSettled();
    };
    result.then(
      () => {
        settle();
        this.out.close();
        this.err.close();
      },
      (error: { code?: string }) => {
        settle();
        if (error?.code === 'ALEPH_ABORTED') {
          this.out.close();
          this.err.close();
        } else {
          this.out.fail(error);
          this.err.fail(error);
        }
      },
    );
  }

  get exited(): boolean {
    return this.#exited;
  }

  wait(): Promise<SandboxOutput> {
    return this.#result as Promise<SandboxOutput>;
  }

  async kill(signal: KillSignal = 'SIGKILL', options: KillOptions = {}): Promise<void> {
    if (!KILL_SIGNALS.includes(signal)) {
      throw new InvalidInputError(
        'ALEPH_INVALID_COMMAND',
        'kill signal',
        signal,
        'is not a signal kill() sends',
        `pass one of ${KILL_SIGNALS.join(', ')}, or nothing for SIGKILL`,
      );
    }
    const grace = options.graceMs ?? DEFAULT_KILL_GRACE_MS;
    if (!(Number.isFinite(grace) && grace >= 0)) {
      throw new InvalidInputError(
        'ALEPH_INVALID_COMMAND',
        'kill options.graceMs',
        grace,
        'is not a number of milliseconds >= 0',
        'pass e.g. 2000, or omit it',
      );
    }
    if (!this.#exited && !this.#killer.signal.aborted) {
      this.#killer.abort(createKillRequest(signal, grace));
    }
    await this.#result?.then(
      () => {},
      () => {},
    );
  }
}
