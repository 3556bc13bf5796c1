// Interleaved timing for the benchmarks: every variant runs PER_ROUND times in turn, round after round, so
// a noisy machine slows them alike and ratios within one run stay comparable.

/** The median of `xs` (the upper one of an even count). */
export const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/**
 * Times each async variant of `variants` (name → function), `warmup` times each first, then `rounds`
 * rounds of `perRound` calls each, interleaved. Returns every sample per name and the samples per round.
 */
export async function interleave(variants, { rounds, perRound, warmup = 5 }) {
  const samples = Object.fromEntries(Object.keys(variants).map((k) => [k, []]));
  const byRound = Object.fromEntries(Object.keys(variants).map((k) => [k, []]));
  for (const fn of Object.values(variants)) for (let i = 0; i < warmup; i++) await fn();
  for (let round = 0; round < rounds; round++) {
    for (const [name, fn] of Object.entries(variants)) {
      const xs = [];
      for (let i = 0; i < perRound; i++) {
        const t = performance.now();
        await fn();
        xs.push(performance.now() - t);
      }
      samples[name].push(...xs);
      byRound[name].push(xs);
    }
  }
  return { samples, rounds: byRound };
}
