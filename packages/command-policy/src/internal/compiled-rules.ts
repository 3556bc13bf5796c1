/**
 * Rules compiled for matching: every pattern and exemption of the active rules in one set of the policy's
 * engine, matched in one pass over the scan text; the rare rule whose exemption also matched is checked
 * again line by line with its own patterns.
 */
import type { Rule } from '../rule.js';
import type { Pattern, PatternSet, RegexEngine } from './regex-engine.js';

interface Entry {
  readonly rule: number;
  readonly exempt: boolean;
}

export interface CompiledRules {
  readonly set: PatternSet | undefined;
  readonly entries: readonly Entry[];
  /** Per-rule patterns for the exemption slow path, compiled on first use (exemptions rarely fire). */
  readonly perRule: Map<number, () => { patterns: Pattern[]; exempt: Pattern[] }>;
}

/** Compiles the rules `active` keeps into one set of `engine` (patterns are multi-line: `(?m)`). */
export function compileRules(
  engine: RegexEngine,
  rules: readonly Rule[],
  active: (rule: Rule) => boolean,
): CompiledRules {
  const patterns: string[] = [];
  const entries: Entry[] = [];
  const perRule = new Map<number, () => { patterns: Pattern[]; exempt: Pattern[] }>();
  rules.forEach((rule, index) => {
    if (!active(rule)) return;
    for (const p of rule.patterns) {
      patterns.push(`(?m)${p}`);
      entries.push({ rule: index, exempt: false });
    }
    for (const p of rule.exempt ?? []) {
      patterns.push(`(?m)${p}`);
      entries.push({ rule: index, exempt: true });
    }
    if ((rule.exempt ?? []).length > 0) {
      let regexes: { patterns: Pattern[]; exempt: Pattern[] } | undefined;
      perRule.set(index, () => {
        regexes ??= {
          patterns: rule.patterns.map((p) => engine.compile(`(?m)${p}`)),
          exempt: (rule.exempt ?? []).map((p) => engine.compile(`(?m)${p}`)),
        };
        return regexes;
      });
    }
  });
  return { set: patterns.length > 0 ? engine.compileSet(patterns) : undefined, entries, perRule };
}

/** The indices (into the rules compiled) of the rules that match `scanText`, in rule order. */
export function matchRules(compiled: CompiledRules, scanText: string): number[] {
  const hit = new Set<number>();
  const exempted = new Set<number>();
  if (compiled.set !== undefined) {
    for (const index of compiled.set.match(scanText)) {
      const entry = compiled.entries[index] as Entry;
      (entry.exempt ? exempted : hit).add(entry.rule);
    }
  }
  // Slow path, only when an exemption matched: a rule still matches if some line matches one of its
  // patterns and none of its exemptions.
  for (const ruleIndex of exempted) {
    if (!hit.has(ruleIndex)) continue;
    const compiledRule = compiled.perRule.get(ruleIndex)?.();
    if (compiledRule === undefined) continue;
    const stillHits = scanText
      .split('\n')
      .some(
        (line) =>
          compiledRule.patterns.some((p) => p.test(line)) && !compiledRule.exempt.some((p) => p.test(line)),
      );
    if (!stillHits) hit.delete(ruleIndex);
  }
  return [...hit].sort((a, b) => a - b);
}
