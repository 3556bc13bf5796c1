// A run's output: every chunk captured within the budget and handed to its callback, whose promise
// pauses that stream (backpressure) until a kill drains everything without waiting (see OutputCallback).
import type { Readable } from 'node:stream';
import type { OutputCallback, OutputCapture } from './runner.js';

/** The streams of a run being forwarded: when both have ended, and how to stop waiting for consumers. */
export interface ForwardedOutput {
  readonly ended: Promise<unknown>;
  /** Resumes every paused stream and pauses none again (after a kill). */
  drain(): void;
}

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
      // The pipes hold at most what was written before the kill: read it without waiting for consumers.
      draining = true;
      for (const stream of paused) stream.resume();
      paused.clear();
    },
  };
}
