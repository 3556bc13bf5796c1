// A run's output: every chunk captured within the budget and handed to its callback, whose promise
// pauses that stream (backpressure) until a kill drains the pipes without waiting (see OutputCallback).
import type { Readable } from 'node:stream';
import type { OutputCallback, OutputCapture } from './runner.js';

/** The streams of a run being forwarded: when both have ended, and how to stop waiting for consumers. */
export interface ForwardedOutput {
  readonly ended: Promise<unknown>;
  /**
   * Resumes every paused stream and pauses none again (after a kill): each callback gets at most
   * {@link DRAIN_BYTES} more, the capture what its budget takes.
   */
  drain(): void;
}

/**
 * What a callback is still handed of a stream once a kill drained it: the pipes' contents, bounded
 * even if some process of the run kept writing, so a consumer that stopped reading holds no more.
 */
export const DRAIN_BYTES = 1024 * 1024;

/** Forwards `stdout` and `stderr` into their captures and callbacks. */
export function forwardOutput(
  streams: { readonly stdout: Readable; readonly stderr: Readable },
  captures: { readonly stdout: OutputCapture; readonly stderr: OutputCapture },
  callbacks: {
    readonly onStdout?: OutputCallback | undefined;
    readonly onStderr?: OutputCallback | undefined;
  },
): ForwardedOutput {
  // Streams paused for a consumer's promise; a kill resumes them all.
  const paused = new Set<Readable>();
  let draining = false;
  const forward = (stream: Readable, capture: OutputCapture, callback: OutputCallback | undefined) => {
    let live = callback !== undefined;
    let afterDrain = DRAIN_BYTES;
    stream.on('data', (chunk: Uint8Array) => {
      capture.push(chunk);
      if (!live || callback === undefined) return;
      if (draining) {
        if (afterDrain <= 0) return;
        if (chunk.byteLength > afterDrain) chunk = chunk.subarray(0, afterDrain);
        afterDrain -= chunk.byteLength;
      }
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
  const ended = (stream: Readable) =>
    new Promise<void>((resolve) => {
      if (stream.destroyed || stream.readableEnded) resolve();
      else {
        stream.once('close', () => resolve());
        stream.once('error', () => resolve());
      }
    });
  const both = Promise.all([ended(streams.stdout), ended(streams.stderr)]);
  forward(streams.stdout, captures.stdout, callbacks.onStdout);
  forward(streams.stderr, captures.stderr, callbacks.onStderr);
  return {
    ended: both,
    drain() {
      // Read what the pipes hold without waiting for consumers; the callbacks get a bounded part of it.
      if (draining) return;
      draining = true;
      for (const stream of paused) stream.resume();
      paused.clear();
    },
  };
}

/**
 * When a run being ended reads its pipes without waiting for consumers: at its hard kill, or once its
 * program has exited (before the kill, or within a graceful stop's grace), when only the pipes are left.
 */
export function drainWhenEnded(
  output: ForwardedOutput,
  exited: Promise<unknown>,
): { onKill(): void; onEnding(): void } {
  let ending = false;
  let gone = false;
  const drainIfGone = () => {
    if (ending && gone) output.drain();
  };
  exited.then(
    () => {
      gone = true;
      drainIfGone();
    },
    () => {},
  );
  return {
    onKill: () => output.drain(),
    onEnding: () => {
      ending = true;
      drainIfGone();
    },
  };
}
