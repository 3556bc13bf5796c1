/**
 * The regular-expression engines a policy can match with, behind one small interface: the native `re2`
 * addon when it is installed and loads, otherwise `re2js`, a pure-JavaScript port of RE2 that needs no
 * build step. Both read RE2 syntax, both match in time linear in the text, and both evaluate many
 * patterns in one pass (a set); the tests hold them to the same decisions.
 *
 * Each engine is loaded on first use, synchronously (`createCommandPolicy` is synchronous), so a process
 * that uses one never loads the other.
 */
import { createRequire } from 'node:module';
import type { PolicyEngine, PolicyEngineChoice } from '../engine.js';
import { createNativeEngine } from './engine-re2.js';
import { createPureEngine } from './engine-re2js.js';

/** Patterns compiled together; `match` says which of them match somewhere in a text. */
export interface PatternSet {
  match(text: string): number[];
}

/** One compiled pattern. */
export interface Pattern {
  test(text: string): boolean;
}

/** A regular-expression engine with RE2 syntax and semantics. */
export interface RegexEngine {
  readonly name: PolicyEngine;
  /** Compiles patterns into one set. Throws for a pattern the engine cannot compile. */
  compileSet(patterns: readonly string[]): PatternSet;
  /** Compiles one pattern. Throws with the engine's reason for a pattern it cannot compile. */
  compile(pattern: string): Pattern;
}

/** Thrown for `engine: 're2'` where the native addon is not installed or does not load. */
export class EngineUnavailableError extends Error {
  constructor(engine: PolicyEngine, cause: unknown) {
    super(
      `the ${engine} engine is not available here (${cause instanceof Error ? cause.message.split('\n')[0] : String(cause)}); install it (npm install re2, and let its build run) or use engine "re2js" or "auto"`,
      { cause },
    );
    this.name = 'EngineUnavailableError';
  }
}

const require = createRequire(import.meta.url);
const loaded: Partial<Record<PolicyEngine, RegexEngine | Error>> = {};

function load(name: PolicyEngine): RegexEngine | Error {
  loaded[name] ??= (() => {
    try {
      return name === 're2' ? createNativeEngine(require('re2')) : createPureEngine(require('re2js'));
    } catch (error) {
      return error instanceof Error ? error : new Error(String(error));
    }
  })();
  return loaded[name];
}

/**
 * The engine `choice` names; `auto` is `re2` when the addon loads (and compiles a pattern), else `re2js`.
 *
 * @throws {EngineUnavailableError} when the named engine cannot be loaded.
 */
export function loadEngine(choice: PolicyEngineChoice = 'auto'): RegexEngine {
  if (choice === 'auto') {
    const native = load('re2');
    return native instanceof Error ? loadEngine('re2js') : native;
  }
  const engine = load(choice);
  if (engine instanceof Error) throw new EngineUnavailableError(choice, engine);
  return engine;
}
