import { readFileSync } from 'node:fs';
import { parse as parseToml } from 'smol-toml';
import { z } from 'zod';

const BRAND = Symbol.for('@aleph/sandbox-core/AlephError');

/**
 * A policy config problem. Carries the `ALEPH_CONFIG_INVALID` code and the brand `isAlephError` from
 * `@aleph/sandbox-core` recognises, without depending on it.
 */
export class PolicyConfigError extends Error {
  readonly code = 'ALEPH_CONFIG_INVALID' as const;
  readonly field: string;
  readonly details: Readonly<Record<string, unknown>>;
  constructor(field: string, message: string) {
    super(message);
    this.field = field;
    this.details = { field };
  }
}
Object.defineProperty(PolicyConfigError.prototype, 'name', { value: 'PolicyConfigError' });
Object.defineProperty(PolicyConfigError.prototype, BRAND, { value: true });

/** A user rule: `regex` (RE2 syntax) is matched against the command text and each command line. */
export const CustomRuleSchema = z
  .object({
    name: z
      .string({ error: 'must be a string; name the rule, e.g. "no-prod-db"' })
      .regex(/^[A-Za-z0-9][A-Za-z0-9._-]*$/, {
        message: 'must be letters, digits, ".", "_" or "-"; e.g. "no-prod-db"',
      }),
    regex: z.string({ error: 'must be a string; an RE2 pattern such as "psql .*prod"' }).min(1, {
      message: 'is empty; give an RE2 pattern such as "psql .*prod"',
    }),
    action: z.enum(['block', 'warn'], { error: 'must be "block" or "warn"' }).default('block'),
    description: z.string().default(''),
    platform: z
      .enum(['posix', 'windows', 'any'], { error: 'must be "posix", "windows" or "any"' })
      .default('any'),
  })
  .strict();

/** The `[sandbox.command_policy]` table. */
export const CommandPolicyConfigSchema = z
  .object({
    enabled: z.boolean({ error: 'must be true or false' }).default(true),
    enforcement: z
      .enum(['block', 'warn', 'off'], { error: 'must be "block", "warn" or "off"' })
      .default('block'),
    useDefaultRules: z.boolean({ error: 'must be true or false' }).default(true),
    customRules: z.array(CustomRuleSchema, { error: 'must be a list of rules' }).default([]),
  })
  .strict();

export type CommandPolicyConfig = z.output<typeof CommandPolicyConfigSchema>;
export type CommandPolicyConfigInput = z.input<typeof CommandPolicyConfigSchema>;
export type CustomRule = z.output<typeof CustomRuleSchema>;

const SNAKE: Record<string, string> = { use_default_rules: 'useDefaultRules', custom_rules: 'customRules' };

function camelKeys(value: unknown): unknown {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    const key = SNAKE[k] ?? k;
    out[key] = key === 'customRules' && Array.isArray(v) ? v.map((r) => ({ ...(r as object) })) : v;
  }
  return out;
}

/**
 * Validates a policy config (camelCase or TOML's snake_case keys) and fills in defaults.
 *
 * @throws {PolicyConfigError} naming the key, the value and the expected value.
 */
export function parsePolicyConfig(input: unknown, root = 'command_policy'): CommandPolicyConfig {
  const result = CommandPolicyConfigSchema.safeParse(camelKeys(input ?? {}));
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  const path = [root, ...(issue?.path ?? []).map(String)];
  if (issue?.code === 'unrecognized_keys') path.push(issue.keys[0] ?? '?');
  let value: unknown = camelKeys(input);
  for (const key of path.slice(1)) value = (value as Record<string, unknown> | undefined)?.[key];
  const problem =
    issue?.code === 'unrecognized_keys'
      ? 'is not a known key; remove it or check its spelling'
      : issue?.message;
  throw new PolicyConfigError(
    path.join('.'),
    `${path.join('.')} ${problem ?? 'is invalid'} (got ${JSON.stringify(value) ?? 'nothing'})`,
  );
}

/**
 * Reads a policy config file the caller names: TOML (`[sandbox.command_policy]` or top-level keys) or
 * JSON (`{ "sandbox": { "command_policy": … } }` or top-level keys). The only file access in the package.
 *
 * @throws {PolicyConfigError} when the file cannot be read or parsed, or a key is invalid.
 */
export function loadPolicyConfig(file: string): CommandPolicyConfig {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new PolicyConfigError('file', `cannot read ${file}: ${(error as Error).message}`);
  }
  let data: unknown;
  try {
    data = /\.json$/i.test(file) ? JSON.parse(text) : parseToml(text);
  } catch (error) {
    throw new PolicyConfigError(
      'file',
      `${file} is not valid ${/\.json$/i.test(file) ? 'JSON' : 'TOML'}: ${(error as Error).message}`,
    );
  }
  const table = data as Record<string, Record<string, unknown> | undefined>;
  const section =
    table.sandbox?.command_policy ??
    table.sandbox?.commandPolicy ??
    table.command_policy ??
    table.commandPolicy ??
    table;
  return parsePolicyConfig(section, table.sandbox ? 'sandbox.command_policy' : 'command_policy');
}
