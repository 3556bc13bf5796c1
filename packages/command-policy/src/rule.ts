/** What a matched rule does: `block` stops the command, `warn` lets it run and records the match. */
export type RuleAction = 'block' | 'warn';

/** Which platform's commands a rule reads. `any` rules are active for both. */
export type RulePlatform = 'posix' | 'windows' | 'any';

/**
 * A policy rule. Built-in rules are written against the scanner's structured lines (see
 * `docs/scan-format.md`); custom rules are matched against the command text and every command line.
 */
export interface Rule {
  /** Stable kebab-case name, reported in decisions. */
  readonly name: string;
  readonly action: RuleAction;
  readonly platform: RulePlatform;
  /** One sentence: what it catches and why it matters. */
  readonly description: string;
  /** RE2 patterns; any one matching is a match. */
  readonly patterns: readonly string[];
  /** RE2 patterns that cancel a match of this rule on the same line (RE2 has no lookaround). */
  readonly exempt?: readonly string[];
  /** Commands that must match and near misses that must not (tests run these). */
  readonly examples?: { readonly match: readonly string[]; readonly nearMiss: readonly string[] };
}

/** Identity helper that types a rule table. */
export function defineRules(rules: readonly Rule[]): readonly Rule[] {
  return rules;
}
