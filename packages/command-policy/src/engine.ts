/**
 * The names of the regex engines a policy can match with (see `internal/regex-engine.ts` for the engines
 * themselves).
 */

/** `re2`: the native addon (an optional peer dependency, built at install); `re2js`: pure JavaScript. */
export type PolicyEngine = 're2' | 're2js';

/** Which engine to use: a name, or `auto` for `re2` when it loads and `re2js` otherwise. */
export type PolicyEngineChoice = PolicyEngine | 'auto';
