/**
 * The default engine: `re2js`, a pure-JavaScript port of RE2 (no install script, no native code). Sets
 * match on a lazily built DFA whose memory is capped; past the cap it falls back to RE2's NFA, still in
 * time linear in the text.
 */
import type { RegexEngine } from './regex-engine.js';

/** The part of the `re2js` module the engine uses. */
interface Re2jsModule {
  RE2JS: { compile(pattern: string): { test(text: string): boolean } };
  RE2Set: {
    readonly UNANCHORED: number;
    new (
      anchor: number,
      flags: number,
      maxMem: number,
    ): { add(pattern: string): number; compile(): void; match(text: string): number[] };
  };
}

/**
 * The DFA cache of a set. The built-in Windows rules settle at about 2,300 states; re2js's default (8 MiB)
 * makes the cache thrash on them, at 100 times the cost per match.
 */
const SET_MEMORY = 64 * 1024 * 1024;

export function createPureEngine(re2js: unknown): RegexEngine {
  const { RE2JS, RE2Set } = re2js as Re2jsModule;
  return {
    name: 're2js',
    compileSet(patterns) {
      const set = new RE2Set(RE2Set.UNANCHORED, 0, SET_MEMORY);
      for (const p of patterns) set.add(p);
      set.compile();
      return set;
    },
    compile: (pattern) => RE2JS.compile(pattern),
  };
}
