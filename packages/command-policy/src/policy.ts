import diagnosticsChannel from 'node:diagnostics_channel';
import { type CommandPolicyConfig, type CustomRule, parsePolicyConfig } from './config.js';
import type { PolicyEngine, PolicyEngineChoice } from './engine.js';
import { type CompiledRules, compileRules, matchRules } from './internal/compiled-rules.js';
import { loadEngine } from './internal/regex-engine.js';
import { buildScanText, type ScanInput } from './internal/scan-text.js';
import { normalizeText } from './normalize.js';
import type { Rule, RuleAction } from './rule.js';
import { POSIX_RULES } from './rules/posix.js';
import { WINDOWS_RULES } from './rules/windows.js';

/** The platform whose shells a command is read for. */
export type Platform = 'posix' | 'windows';

/** One rule that matched. */
export interface RuleMatch {
  readonly name: string;
  readonly action: RuleAction;
  readonly description: string;
  readonly source: 'default' | 'custom' | 'engine';
}

/**
 * A policy verdict. `decision` is the most severe matched action after enforcement (`block` becomes
 * `warn` under `enforcement = "warn"`; everything becomes `allow` under `"off"`, with the matches still
 * listed).
 */
export interface Decision {
  readonly decision: 'allow' | 'warn' | 'block';
  /** Names of the matched rules, most severe first. */
  readonly rules: readonly string[];
  readonly matches: readonly RuleMatch[];
  /**
   * True when part of the command was not scanned: input past the scan bound (`scan-truncated`), or more
   * expanded text than a scan reads (`scan-incomplete`).
   */
  readonly truncated: boolean;
}

/** A command policy compiled once and evaluated many times. */
export interface CommandPolicy {
  /** Evaluates shell text. Never throws for a dangerous command. */
  evaluate(text: string, options?: { platform?: Platform }): Decision;
  /** Evaluates argv as a tool passes it (program + args + optional stdin payload). */
  evaluateCommand(
    command: { program: string; args?: readonly string[]; stdin?: string | Uint8Array },
    options?: { platform?: Platform },
  ): Decision;
  /** The active rules, built-in then custom. */
  readonly rules: readonly Rule[];
  /** Custom rules that failed to compile, with why; the rest of the policy still runs. */
  readonly configErrors: readonly { readonly rule: string; readonly error: string }[];
  readonly config: CommandPolicyConfig;
  /** The regex engine the rules are matched with. */
  readonly engine: PolicyEngine;
}

/** How a policy is built (beside its config). */
export interface CommandPolicyOptions {
  /**
   * The regex engine: `re2` (the native addon, an optional peer dependency that needs a build step),
   * `re2js` (pure JavaScript, always installed), or `auto` (default): `re2` when it loads, else `re2js`.
   * Both use RE2 syntax, match in linear time and give the same decisions; `re2` is faster.
   */
  readonly engine?: PolicyEngineChoice;
}

/** Only this many bytes of a command (program, args and stdin) are scanned. */
export const SCAN_LIMIT_BYTES = 256 * 1024;

export const COMMAND_POLICY_CHANNEL = 'aleph:command_policy';
const channel = diagnosticsChannel.channel(COMMAND_POLICY_CHANNEL);

/** Every built-in rule. */
export const DEFAULT_RULES: readonly Rule[] = [...POSIX_RULES, ...WINDOWS_RULES];

const UNSUPPORTED_SYNTAX: readonly [RegExp, string][] = [
  [/\(\?<?[=!]/, 'lookaround ((?=, (?!, (?<=, (?<!)'],
  [/\\[1-9]|\\k</, 'backreferences (\\1, \\k<name>)'],
  [/\(\?>/, 'atomic groups ((?>…))'],
  [/[*+?}][+]/, 'possessive quantifiers (*+, ++)'],
];

/**
 * Why an RE2 pattern cannot compile, in words, or undefined when it compiles (with `engine`, default the
 * one `auto` picks).
 */
export function checkPattern(pattern: string, engine: PolicyEngineChoice = 'auto'): string | undefined {
  for (const [re, what] of UNSUPPORTED_SYNTAX) {
    if (re.test(pattern)) {
      return `uses ${what}, which RE2 does not support (RE2 guarantees linear time); rewrite it without them`;
    }
  }
  try {
    loadEngine(engine).compile(pattern);
    return undefined;
  } catch (error) {
    return `is not a valid RE2 pattern: ${error instanceof Error ? error.message : String(error)}`;
  }
}

const SEVERITY: Record<RuleAction, number> = { warn: 1, block: 2 };

function customToRule(custom: CustomRule): Rule {
  return {
    name: custom.name,
    action: custom.action,
    platform: custom.platform,
    description: custom.description,
    patterns: [custom.regex],
  };
}

/**
 * Compiles a policy: the active rules for each platform in one set of its regex engine (the native `re2`
 * addon when it is installed, else the pure-JavaScript `re2js`; see {@link CommandPolicyOptions}), built
 * on first use. A malformed custom rule
 * is left out and reported in `configErrors` (and on `aleph:command_policy`); if that would leave no
 * rule at all, the defaults are used: it fails safe, never to "no filter".
 *
 * @example
 * ```ts
 * const policy = createCommandPolicy()
 * policy.evaluate('rm -rf /').decision // 'block'
 * ```
 * @throws {Error} for an invalid config object (a programming error; see {@link parsePolicyConfig}), or for
 * `engine: 're2'` where the native addon does not load.
 */
export function createCommandPolicy(input: unknown = {}, options: CommandPolicyOptions = {}): CommandPolicy {
  const config = parsePolicyConfig(input);
  const engine = loadEngine(options.engine ?? 'auto');
  const configErrors: { rule: string; error: string }[] = [];
  const custom: Rule[] = [];
  for (const rule of config.customRules) {
    const error = checkPattern(rule.regex, engine.name);
    if (error === undefined) custom.push(customToRule(rule));
    else configErrors.push({ rule: rule.name, error: `regex ${JSON.stringify(rule.regex)} ${error}` });
  }
  const useDefaults = config.useDefaultRules || custom.length === 0;
  const rules: Rule[] = [...(useDefaults ? DEFAULT_RULES : []), ...custom];
  for (const e of configErrors) {
    if (channel.hasSubscribers) channel.publish({ type: 'command_policy_config_error', ...e });
  }

  // Each platform's set is compiled on first use (a POSIX host never pays for the Windows rules).
  const sets: Partial<Record<Platform, CompiledRules>> = {};
  const compiled = (platform: Platform): CompiledRules => {
    sets[platform] ??= compileRules(
      engine,
      rules,
      platform === 'posix' ? (r) => r.platform === 'posix' || r.platform === 'any' : () => true,
    );
    return sets[platform];
  };

  const run = (scanInput: ScanInput, platform: Platform, truncated: boolean, preview: string): Decision => {
    const scan = buildScanText(scanInput, platform);
    const hits = matchRules(compiled(platform), scan.text);
    const decision = decide(hits, rules, truncated, scan.incomplete, config);
    if (decision.matches.length > 0 && channel.hasSubscribers) {
      channel.publish({
        type: 'command_policy',
        decision: decision.decision,
        rules: decision.rules,
        enforcement: config.enforcement,
        platform,
        truncated,
        command: preview.length > 200 ? `${preview.slice(0, 200)}…` : preview,
      });
    }
    return decision;
  };

  return {
    rules,
    configErrors,
    config,
    engine: engine.name,
    evaluate(text, options = {}) {
      if (!config.enabled) return ALLOW;
      const { text: bounded, truncated } = bound(String(text));
      const normalized = normalizeText(bounded);
      return run({ text: normalized }, options.platform ?? 'posix', truncated, normalized);
    },
    evaluateCommand(command, options = {}) {
      if (!config.enabled) return ALLOW;
      const stdinText =
        command.stdin === undefined
          ? undefined
          : typeof command.stdin === 'string'
            ? command.stdin
            : new TextDecoder('utf-8', { fatal: false }).decode(command.stdin);
      const args = command.args ?? [];
      const joined = [command.program, ...args].join(' ');
      const { text: boundedStdin, truncated } = bound(stdinText ?? '', Buffer.byteLength(joined));
      const argsTruncated = Buffer.byteLength(joined) > SCAN_LIMIT_BYTES;
      const scanInput: ScanInput = {
        program: normalizeText(command.program),
        args: args.map((a) => normalizeText(String(a))),
        ...(stdinText === undefined ? {} : { stdin: normalizeText(boundedStdin) }),
      };
      return run(scanInput, options.platform ?? 'posix', truncated || argsTruncated, joined);
    },
  };
}

const ALLOW: Decision = Object.freeze({ decision: 'allow', rules: [], matches: [], truncated: false });

/** Cuts `text` to what fits in the scan bound after `used` bytes. */
function bound(text: string, used = 0): { text: string; truncated: boolean } {
  const budget = Math.max(0, SCAN_LIMIT_BYTES - used);
  if (text.length * 3 <= budget) return { text, truncated: false };
  const length = Buffer.byteLength(text, 'utf8');
  if (length <= budget) return { text, truncated: false };
  // As many bytes as characters: all ASCII, so the string itself is cut.
  if (length === text.length) return { text: text.slice(0, budget), truncated: true };
  const bytes = Buffer.from(text, 'utf8');
  // Cut on a character boundary.
  let end = budget;
  while (end > 0 && ((bytes[end] as number) & 0xc0) === 0x80) end--;
  return { text: bytes.subarray(0, end).toString('utf8'), truncated: true };
}

/** The verdict: the matched rules (and the engine's own warnings), most severe first, after enforcement. */
function decide(
  hits: readonly number[],
  rules: readonly Rule[],
  truncated: boolean,
  incomplete: boolean,
  config: CommandPolicyConfig,
): Decision {
  const matches: RuleMatch[] = hits.map((i) => {
    const rule = rules[i] as Rule;
    return {
      name: rule.name,
      action: rule.action,
      description: rule.description,
      source: DEFAULT_RULES.includes(rule) ? 'default' : 'custom',
    };
  });
  if (truncated) {
    matches.push({
      name: 'scan-truncated',
      action: 'warn',
      description: `only the first ${SCAN_LIMIT_BYTES / 1024} KiB of the command were scanned; the rest was not checked`,
      source: 'engine',
    });
  }
  if (incomplete) {
    matches.push({
      name: 'scan-incomplete',
      action: 'warn',
      description:
        'the command expands to more text (nested code, substituted variables) than is scanned; the rest was not checked',
      source: 'engine',
    });
  }
  matches.sort((a, b) => SEVERITY[b.action] - SEVERITY[a.action]);
  let severity = matches.reduce((max, m) => Math.max(max, SEVERITY[m.action]), 0);
  if (config.enforcement === 'warn') severity = Math.min(severity, 1);
  if (config.enforcement === 'off') severity = 0;
  const decision = severity === 2 ? 'block' : severity === 1 ? 'warn' : 'allow';
  return { decision, rules: matches.map((m) => m.name), matches, truncated: truncated || incomplete };
}
