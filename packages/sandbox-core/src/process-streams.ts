// The web streams of a spawned process: an output stream fed by a run's output callback with
// backpressure (OutputStream), and a writable stdin whose chunks the driver pulls (StdinChannel).
import { AlephError } from './errors.js';

/** How many bytes an output stream queues before it pauses the command. */
export const OUTPUT_QUEUE_BYTES = 64 * 1024;

/**
 * A `ReadableStream` fed by `push` (an `OutputCallback`): `push` returns a promise while the queue is full
 * (`desiredSize <= 0`), which pauses the pipe until the consumer reads. Once cancelled, `push` drops
 * chunks and never waits.
 */
export class OutputStream {
  readonly stream: ReadableStream<Uint8Array>;
  #controller!: ReadableStreamDefaultController<Uint8Array>;
  #waiter: (() => void) | undefined;
  #done = false;

  constructor(queueBytes = OUTPUT_QUEUE_BYTES) {
    this.stream = new ReadableStream<Uint8Array>(
      {
        start: (controller) => {
          this.#controller = controller;
        },
        pull: () => this.#wake(),
        cancel: () => {
          this.#done = true;
          this.#wake();
        },
      },
      { highWaterMark: queueBytes, size: (chunk) => chunk.byteLength },
    );
  }

  /** Queues a chunk; a promise when the consumer must catch up first. */
  readonly push = (chunk: Uint8Array): undefined | Promise<void> => {
    if (this.#done) return undefined;
    this.#controller.enqueue(chunk);
    if ((this.#controller.desiredSize ?? 1) > 0) return undefined;
    return new Promise<void>((resolve) => {
      this.#waiter = resolve;
    });
  };

  /** Ends the stream (what was queued can still be read). */
  close(): void {
    if (this.#done) return;
    this.#done = true;
    this.#wake();
    this.#controller.close();
  }

  /** Errors the stream (a reader gets `error`). */
  fail(error: unknown): void {
    if (this.#done) return;
    this.#done = true;
    this.#wake();
    this.#controller.error(error);
  }

  #wake(): void {
    const waiter = this.#waiter;
    this.#waiter = undefined;
    waiter?.();
  }
}

interface Pending {
  readonly chunk: Uint8Array;
  readonly taken: () => void;
  readonly refused: (error: unknown) => void;
}

/** `ALEPH_PROCESS_EXITED`: stdin written after the process ended. */
export function exitedError(): AlephError {
  return new AlephError(
    'ALEPH_PROCESS_EXITED',
    'stdin: the process has exited (or was killed), so nothing more can be written to it; check `exited` before writing, or spawn the command again',
  );
}

/**
 * A writable stdin whose chunks the driver pulls as an `AsyncIterable`: a `write` resolves once the
 * driver has taken its chunk (one chunk in flight: the program's reading paces the writer); `close`
 * ends the iterable (EOF); once the driver stops pulling (the process ended), pending and later writes
 * reject with `ALEPH_PROCESS_EXITED`.
 */
export class StdinChannel implements AsyncIterable<Uint8Array> {
  readonly stream: WritableStream<Uint8Array>;
  readonly #queue: Pending[] = [];
  #reader: ((result: IteratorResult<Uint8Array>) => void) | undefined;
  #ended = false;
  #gone = false;

  constructor() {
    this.stream = new WritableStream<Uint8Array>({
      write: (chunk) => this.#write(chunk),
      close: () => this.#end(),
      abort: () => this.#end(),
    });
  }

  #write(chunk: Uint8Array): Promise<void> {
    if (!(chunk instanceof Uint8Array)) {
      return Promise.reject(
        new TypeError(`stdin: write a Uint8Array (got ${typeof chunk}); encode text with TextEncoder`),
      );
    }
    if (this.#gone) return Promise.reject(exitedError());
    return new Promise<void>((taken, refused) => {
      const reader = this.#reader;
      if (reader !== undefined) {
        this.#reader = undefined;
        reader({ value: chunk, done: false });
        taken();
      } else this.#queue.push({ chunk, taken, refused });
    });
  }

  #end(): void {
    this.#ended = true;
    const reader = this.#reader;
    this.#reader = undefined;
    reader?.({ value: undefined, done: true });
  }

  /** The driver stopped reading: pending writes and every later one reject. */
  stop(): void {
    if (this.#gone) return;
    this.#gone = true;
    for (const pending of this.#queue.splice(0)) pending.refused(exitedError());
    this.#end();
  }

  [Symbol.asyncIterator](): AsyncIterator<Uint8Array> {
    return {
      next: () => {
        const pending = this.#queue.shift();
        if (pending !== undefined) {
          pending.taken();
          return Promise.resolve({ value: pending.chunk, done: false });
        }
        if (this.#ended || this.#gone) return Promise.resolve({ value: undefined, done: true });
        return new Promise((resolve) => {
          this.#reader = resolve;
        });
      },
      return: () => {
        this.stop();
        return Promise.resolve({ value: undefined, done: true });
      },
    };
  }
}
