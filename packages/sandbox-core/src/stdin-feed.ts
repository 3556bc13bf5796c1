// What a run's stdin may be (bytes, text, or a stream of chunks) and how a stream of chunks reaches the
// process: with backpressure, ended at the source's end, stopped when the process is gone.
import type { Writable } from 'node:stream';

/**
 * A command's stdin: text (UTF-8) or bytes written then closed, or chunks streamed as they come (an
 * `AsyncIterable`, which a web `ReadableStream` is) and closed when the source ends (EOF for the program).
 */
export type StdinSource = string | Uint8Array | AsyncIterable<Uint8Array>;

/** True when `stdin` is streamed rather than written at once. */
export function isStreamedStdin(stdin: StdinSource | undefined): stdin is AsyncIterable<Uint8Array> {
  return (
    stdin !== undefined &&
    typeof stdin !== 'string' &&
    !(stdin instanceof Uint8Array) &&
    typeof (stdin as AsyncIterable<Uint8Array>)[Symbol.asyncIterator] === 'function'
  );
}

/**
 * Copies `source` into `writable` chunk by chunk, waiting for `drain` when the pipe is full (so a program
 * that does not read holds the source back, not this process's memory), then ends it. Stops without
 * ending when `stopped` settles (the process has exited or was killed) or the pipe fails (EPIPE: the
 * program stopped reading); the source is then told to stop (`return()`). Never rejects.
 */
export async function feedStdin(
  writable: Writable,
  source: AsyncIterable<Uint8Array>,
  stopped: Promise<unknown>,
): Promise<void> {
  let gone = false;
  const broken = new Promise<'gone'>((resolve) => {
    const stop = () => {
      gone = true;
      resolve('gone');
    };
    writable.once('error', stop);
    writable.once('close', stop);
    void stopped.then(stop, stop);
  });
  const iterator = source[Symbol.asyncIterator]();
  try {
    for (;;) {
      const next = await Promise.race([iterator.next(), broken]);
      if (next === 'gone' || gone) return;
      if (next.done === true) {
        writable.end();
        return;
      }
      const chunk = next.value;
      if (!(chunk instanceof Uint8Array)) {
        throw new TypeError(`stdin chunk must be a Uint8Array (got ${typeof chunk})`);
      }
      if (chunk.byteLength === 0) continue;
      if (!writable.write(chunk)) {
        const drained = new Promise<'drained'>((resolve) => writable.once('drain', () => resolve('drained')));
        if ((await Promise.race([drained, broken])) === 'gone') return;
      }
    }
  } catch {
    // A failing source ends stdin: the program sees EOF rather than waiting forever.
    if (!gone) writable.end();
  } finally {
    if (gone) Promise.resolve(iterator.return?.()).catch(() => {});
  }
}
