import type { z } from 'zod';
import { InvalidInputError } from '../errors.js';

/** Renders a zod path as `root.a.b[2]`. */
export function formatPath(root: string, segments: readonly PropertyKey[]): string {
  let out = root;
  for (const s of segments) {
    out += typeof s === 'number' ? `[${s}]` : `.${String(s)}`;
  }
  return out;
}

function valueAt(input: unknown, segments: readonly PropertyKey[]): unknown {
  let cur: unknown = input;
  for (const s of segments) {
    if (typeof cur !== 'object' || cur === null) return undefined;
    cur = (cur as Record<PropertyKey, unknown>)[s];
  }
  return cur;
}

/**
 * Turns the first zod issue into an {@link InvalidInputError} whose message names the field, the value and
 * the fix. Our schema messages are written as `problem; fix`.
 */
export function zodIssueToError(
  code: 'ALEPH_INVALID_COMMAND' | 'ALEPH_CONFIG_INVALID',
  root: string,
  error: z.ZodError,
  input: unknown,
): InvalidInputError {
  const issue = error.issues[0];
  if (issue === undefined) {
    return new InvalidInputError(code, root, input, 'is invalid', 'check the documented shape');
  }
  if (issue.code === 'unrecognized_keys') {
    const key = issue.keys[0] ?? '?';
    const field = formatPath(root, [...issue.path, key]);
    return new InvalidInputError(
      code,
      field,
      valueAt(input, [...issue.path, key]),
      'is not a known field',
      'remove it or check its spelling',
    );
  }
  const field = formatPath(root, issue.path);
  let value = valueAt(input, issue.path);
  let message = issue.message;
  if (issue.code === 'invalid_key') {
    // A record key failed its schema: report the key itself.
    value = issue.path[issue.path.length - 1];
    message = issue.issues[0]?.message ?? message;
  }
  const [problem, ...fixParts] = message.split('; ');
  const fix = fixParts.length > 0 ? fixParts.join('; ') : genericFix(issue);
  return new InvalidInputError(code, field, value, problem ?? 'is invalid', fix);
}

function genericFix(issue: z.core.$ZodIssue): string {
  if (issue.code === 'invalid_type') return `pass a value of type ${issue.expected}`;
  if (issue.code === 'invalid_value')
    return `use one of ${issue.values.map((v) => JSON.stringify(v)).join(', ')}`;
  return 'check the documented shape of this field';
}
