/**
 * The native engine: the `re2` addon (Google's RE2 in C++), an optional peer dependency. It has to be
 * built or downloaded at install time, so it is used only where it is installed and loads.
 */
import { createLazySet } from './lazy-set.js';
import type { RegexEngine } from './regex-engine.js';

/** The part of the `re2` module's export the engine uses. */
interface Re2Module {
  new (pattern: string, flags: string): { test(text: string): boolean };
  Set: new (patterns: readonly string[], flags: string) => { match(text: string): number[] };
}

/** Wraps the loaded `re2` module; throws when it does not work (a broken or foreign build). */
export function createNativeEngine(re2: unknown): RegexEngine {
  const RE2 = ((re2 as { default?: unknown }).default ?? re2) as Re2Module;
  // A build for another Node ABI loads lazily on some platforms: prove it works before choosing it.
  new RE2.Set(['a'], 'u').match('a');
  return {
    name: 're2',
    // Split by literal as re2js's sets are: a command-line check compiles only the groups its text needs.
    // Patterns reach a set checked already (custom rules by checkPattern, the built-in ones by the tests).
    compileSet: (patterns) => createLazySet(patterns, (part) => new RE2.Set(part, 'u')),
    compile: (pattern) => new RE2(pattern, 'u'),
  };
}
