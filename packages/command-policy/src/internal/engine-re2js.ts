/**
 * The default engine: `re2js`, a pure-JavaScript port of RE2 (no install script, no native code). Sets
 * match on a lazily built DFA whose memory is capped; past the cap it falls back to RE2's NFA, still in
 * time linear in the text. Its sets start out split by literal ({@link createLazySet}): compiling the whole
 * rule set costs re2js a few hundred milliseconds in a fresh process (its parser runs cold).
 */

import { createLazySet } from './lazy-set.js';
import type { RegexEngine } from './regex-engine.js';

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
