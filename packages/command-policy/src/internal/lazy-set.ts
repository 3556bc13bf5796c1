/**
 * A pattern set compiled in parts, as a text needs them. Compiling a whole rule set costs a fresh process
 * (a command-line check, an agent's first command) more than the matching: re2js a few hundred
 * milliseconds (its parser runs cold), the native re2 addon about 15 ms. So a set starts out split by the
 * literal text each pattern needs ({@link requiredLiteral}): a text is matched only against the patterns
 * whose literal it contains (plus those without one), each group compiled the first time it is needed.
 * After {@link WARM_AFTER} matches, or for a text longer than {@link SMALL_TEXT}, the whole set is compiled
 * and used from then on. Either way the same patterns match.
 */
import type { PatternSet } from './regex-engine.js';
import { requiredLiteral } from './required-literal.js';

/** The part of a compiled set the lazy set uses: which patterns match somewhere in a text. */
export interface CompiledSet {
  match(text: string): number[];
}

/** Matches after which a set compiles all its patterns into one (a long-lived process: a linter). */
export const WARM_AFTER = 256;

/** Texts longer than this are matched with the whole set at once (one pass instead of one per group). */
const SMALL_TEXT = 4096;

interface Group {
  readonly literal: string | undefined;
  /** Indices into the set's patterns. */
  readonly members: number[];
  set?: CompiledSet;
}

/** A set of `patterns` that compiles its parts with `compileSet` the first time a text needs them. */
export function createLazySet(
  patterns: readonly string[],
  compileSet: (patterns: readonly string[]) => CompiledSet,
): PatternSet {
  const byLiteral = new Map<string | undefined, Group>();
  patterns.forEach((p, index) => {
    const literal = requiredLiteral(p);
    let group = byLiteral.get(literal);
    if (group === undefined) {
      group = { literal, members: [] };
      byLiteral.set(literal, group);
    }
    group.members.push(index);
  });
  const groups = [...byLiteral.values()];
  let whole: CompiledSet | undefined;
  let matches = 0;
  return {
    match(text) {
      if (whole === undefined && (++matches > WARM_AFTER || text.length > SMALL_TEXT)) {
        whole = compileSet(patterns);
      }
      if (whole !== undefined) return whole.match(text);
      const found: number[] = [];
      for (const group of groups) {
        if (group.literal !== undefined && !text.includes(group.literal)) continue;
        group.set ??= compileSet(group.members.map((i) => patterns[i] as string));
        for (const k of group.set.match(text)) found.push(group.members[k] as number);
      }
      return found;
    },
  };
}
