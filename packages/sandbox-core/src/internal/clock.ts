/**
 * Milliseconds on a monotonic clock, like `performance.now()` but without its cost on first use: the
 * `performance` global loads node:perf_hooks lazily, about a millisecond of a CLI start.
 */
export function monotonicMs(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}
