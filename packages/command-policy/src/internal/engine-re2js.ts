/**
 * The default engine: `re2js`, a pure-JavaScript port of RE2 (no install script, no native code). Sets
 * match on a lazily built DFA whose memory is capped; past the cap it falls back to RE2's NFA, still in
 * time linear in the text.
 *
 * Compiling the whole rule set costs re2js a few hundred milliseconds in a fresh process (its parser runs
 * cold), which a command-line check or an agent's first command would pay in full. So a set starts out
 * split by the literal text each pattern needs ({@link requiredLiteral}): a text is matched only against
 * the patterns whose literal it contains (plus those without one), each group compiled the first time it
 * is needed. After {@link WARM_AFTER} matches, or for a text longer than {@link SMALL_TEXT}, the whole set
 * is compiled and used from then on. Either way the same patterns match.
 */
import type { PatternSet, RegexEngine } from './regex-engine.js';
import { requiredLiteral } from './required-literal.js';

interface Re2jsSet {
  add(pattern: string): number;
  compile(): void;
  match(text: string): number[];
}

/** The part of the `re2js` module the engine uses. */
interface Re2jsModule {
  RE2JS: { compile(pattern: string): { test(text: string): boolean } };
  RE2Set: {
    readonly UNANCHORED: number;
    new (anchor: number, flags: number, maxMem: number): Re2jsSet;
  };
}

/**
 * The DFA cache of a set. The built-in Windows rules settle at about 2,300 states; re2js's default (8 MiB)
 * makes the cache thrash on them, at 100 times the cost per match.
 */
const SET_MEMORY = 64 * 1024 * 1024;

/** Matches after which a set compiles all its patterns into one (a long-lived process: a linter). */
const WARM_AFTER = 256;

/** Texts longer than this are matched with the whole set at once (one pass instead of one per group). */
const SMALL_TEXT = 4096;

export function createPureEngine(re2js: unknown): RegexEngine {
  const { RE2JS, RE2Set } = re2js as Re2jsModule;
  const compileSet = (patterns: readonly string[]): Re2jsSet => {
    const set = new RE2Set(RE2Set.UNANCHORED, 0, SET_MEMORY);
    for (const p of patterns) set.add(p);
    set.compile();
    return set;
  };
  return {
    name: 're2js',
    // Patterns reach a set checked already (custom rules by checkPattern, the built-in ones by the tests,
    // which compile every one): a group compiles on first use.
    compileSet: (patterns) => createLazySet(patterns, compileSet),
    compile: (pattern) => RE2JS.compile(pattern),
  };
}

interface Group {
  readonly literal: string | undefined;
  /** Indices into the set's patterns. */
  readonly members: number[];
  set?: Re2jsSet;
}

function createLazySet(
  patterns: readonly string[],
  compileSet: (patterns: readonly string[]) => Re2jsSet,
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
  let whole: Re2jsSet | undefined;
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
