import { createHash } from 'node:crypto';
import { InvalidInputError } from './errors.js';

/** A JSON value: what a session id may be built from. */
export type JsonValue =
  | string
  | number
  | boolean
  | null
  | readonly JsonValue[]
  | { readonly [k: string]: JsonValue };

/**
 * Identifies an agent session. A non-empty string is the common case; structured keys (for example
 * `{ channel: 'slack', thread: 'T123' }`) are allowed as long as they are plain JSON.
 */
export type SessionId = string | number | { readonly [k: string]: JsonValue } | readonly JsonValue[];

/**
 * Serialises a JSON value canonically: object keys sorted by UTF-16 code unit order at every depth, no
 * whitespace, strings and numbers exactly as `JSON.stringify` writes them. For a string session id this
 * is plain `JSON.stringify(id)`, e.g. `"abc"` (with the quotes).
 *
 * @throws {InvalidInputError} `ALEPH_INVALID_COMMAND` when the value is not plain JSON (undefined,
 *   functions, symbols, bigints, non-finite numbers, cycles, class instances).
 */
export function canonicalJson(value: unknown, field = 'sessionId'): string {
  const seen = new Set<object>();
  const walk = (v: unknown, path: string): string => {
    if (v === null) return 'null';
    switch (typeof v) {
      case 'string':
        return JSON.stringify(v);
      case 'boolean':
        return v ? 'true' : 'false';
      case 'number':
        if (!Number.isFinite(v)) {
          throw notJson(path, v, 'is not a finite number');
        }
        return JSON.stringify(v);
      case 'object': {
        if (seen.has(v)) throw notJson(path, '[circular]', 'contains a cycle');
        seen.add(v);
        let out: string;
        if (Array.isArray(v)) {
          out = `[${v.map((item, i) => walk(item, `${path}[${i}]`)).join(',')}]`;
        } else {
          const proto = Object.getPrototypeOf(v);
          if (proto !== Object.prototype && proto !== null) {
            throw notJson(path, v, 'is a class instance, not a plain object');
          }
          const keys = Object.keys(v).sort();
          out = `{${keys
            .map((k) => `${JSON.stringify(k)}:${walk((v as Record<string, unknown>)[k], `${path}.${k}`)}`)
            .join(',')}}`;
        }
        seen.delete(v);
        return out;
      }
      default:
        throw notJson(path, v, `is a ${typeof v}, which JSON cannot represent`);
    }
  };
  return walk(value, field);
}

function notJson(path: string, value: unknown, problem: string): InvalidInputError {
  return new InvalidInputError(
    'ALEPH_INVALID_COMMAND',
    path,
    value,
    problem,
    'use a string or a plain JSON object as the session id',
  );
}

/**
 * Checks that `value` is a usable session id and returns it.
 *
 * @throws {InvalidInputError} `ALEPH_INVALID_COMMAND` for an empty string or a value that is not plain JSON.
 */
export function assertSessionId(value: unknown, field = 'sessionId'): SessionId {
  if (value === undefined || value === null) {
    throw new InvalidInputError(
      'ALEPH_INVALID_COMMAND',
      field,
      value,
      'is missing',
      'pass `sessionId` in the command or call execute inside `withSession(id, fn)`',
    );
  }
  if (typeof value === 'string' && value.length === 0) {
    throw new InvalidInputError(
      'ALEPH_INVALID_COMMAND',
      field,
      value,
      'is empty',
      'use a non-empty session id',
    );
  }
  if (typeof value === 'boolean') {
    throw new InvalidInputError(
      'ALEPH_INVALID_COMMAND',
      field,
      value,
      'is a boolean',
      'use a string or a plain JSON object as the session id',
    );
  }
  canonicalJson(value, field);
  return value as SessionId;
}

/**
 * The on-disk directory name for a session: the first 16 bytes (32 lowercase hex characters) of the
 * SHA-256 of the session id's {@link canonicalJson}. Deterministic, short, and safe whatever characters
 * the id carries.
 *
 * @example
 * ```ts
 * sessionKeyToFilename('abc') // sha256('"abc"') truncated: 32 hex chars
 * ```
 */
export function sessionKeyToFilename(sessionId: SessionId): string {
  return createHash('sha256').update(canonicalJson(sessionId)).digest('hex').slice(0, 32);
}
