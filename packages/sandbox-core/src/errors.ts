/**
 * Every error code Aleph packages throw. `docs/errors.md` lists each one; a test keeps the two in sync.
 */
export const ALEPH_ERROR_CODES = [
  'ALEPH_CAPABILITY_DENIED',
  'ALEPH_POLICY_DENIED',
  'ALEPH_RATE_LIMITED',
  'ALEPH_INVALID_COMMAND',
  'ALEPH_CONFIG_INVALID',
  'ALEPH_CAPABILITY_UNSUPPORTED',
  'ALEPH_DRIVER_UNAVAILABLE',
  'ALEPH_HELPER_MISSING',
  'ALEPH_DRIVER_FAILED',
  'ALEPH_SANDBOX_DISABLED',
  'ALEPH_DISPOSED',
  'ALEPH_ABORTED',
  'ALEPH_SESSION_CLOSED',
  'ALEPH_PROCESS_EXITED',
  'ALEPH_FILE_NOT_FOUND',
  'ALEPH_PATH_OUTSIDE_WORKSPACE',
  'ALEPH_PATH_PROTECTED',
  'ALEPH_NOT_A_DIRECTORY',
  'ALEPH_IS_A_DIRECTORY',
  'ALEPH_FILE_TOO_LARGE',
  'ALEPH_FILE_PERMISSION_DENIED',
  'ALEPH_INVALID_PATH',
  'ALEPH_RUN_UNKNOWN',
  'ALEPH_UNDO_UNAVAILABLE',
  'ALEPH_USAGE',
] as const;

/** A machine-readable error code, stable across releases. */
export type AlephErrorCode = (typeof ALEPH_ERROR_CODES)[number];

const BRAND = Symbol.for('@aleph/sandbox-core/AlephError');

/** Options shared by every Aleph error constructor. */
export interface AlephErrorOptions {
  /** The underlying error, if any. */
  readonly cause?: unknown;
  /** Structured context (field names, values) for logs and audit records. */
  readonly details?: Readonly<Record<string, unknown>>;
}

/**
 * Base class of every error Aleph throws. Check with {@link isAlephError} rather than `instanceof`, so the
 * check also works when two copies of `@aleph/sandbox-core` are installed.
 *
 * @example
 * ```ts
 * try { await sandbox.execute(cmd) } catch (e) { if (isAlephError(e, 'ALEPH_POLICY_DENIED')) … }
 * ```
 */
export class AlephError extends Error {
  readonly code: AlephErrorCode;
  readonly details: Readonly<Record<string, unknown>>;

  constructor(code: AlephErrorCode, message: string, options: AlephErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.details = options.details ?? {};
  }

  /** A plain object for JSON output and audit records. */
  toJSON(): { name: string; code: AlephErrorCode; message: string; details: Record<string, unknown> } {
    return { name: this.name, code: this.code, message: this.message, details: { ...this.details } };
  }
}
Object.defineProperty(AlephError.prototype, 'name', { value: 'AlephError', configurable: true });
Object.defineProperty(AlephError.prototype, BRAND, { value: true });

/**
 * The command asked for more than the session allows and approval was not given, or its cwd escapes the
 * workspace.
 */
export class CapabilityDeniedError extends AlephError {
  readonly reason: string;
  constructor(reason: string, options: AlephErrorOptions = {}) {
    super('ALEPH_CAPABILITY_DENIED', `capability denied: ${reason}`, options);
    this.reason = reason;
  }
}
Object.defineProperty(CapabilityDeniedError.prototype, 'name', { value: 'CapabilityDeniedError' });

/** A before-hook (command policy, rate limit, …) refused the command; nothing was spawned. */
export class PolicyDeniedError extends AlephError {
  readonly hook: string;
  readonly reason: string;
  constructor(
    code: 'ALEPH_POLICY_DENIED' | 'ALEPH_RATE_LIMITED',
    hook: string,
    reason: string,
    options: AlephErrorOptions = {},
  ) {
    super(code, `${hook} denied the command: ${reason}`, options);
    this.hook = hook;
    this.reason = reason;
  }
}
Object.defineProperty(PolicyDeniedError.prototype, 'name', { value: 'PolicyDeniedError' });

/** Input rejected at the edge: the message names the field, the value and the fix. */
export class InvalidInputError extends AlephError {
  readonly field: string;
  readonly value: unknown;
  constructor(
    code: 'ALEPH_INVALID_COMMAND' | 'ALEPH_CONFIG_INVALID' | 'ALEPH_RUN_UNKNOWN',
    field: string,
    value: unknown,
    problem: string,
    fix: string,
    options: AlephErrorOptions = {},
  ) {
    super(code, `${field} ${problem} (got ${describeValue(value)}); ${fix}`, {
      ...options,
      details: { field, value: describeValue(value), fix, ...options.details },
    });
    this.field = field;
    this.value = value;
  }
}
Object.defineProperty(InvalidInputError.prototype, 'name', { value: 'InvalidInputError' });

/** The OS driver is missing, cannot enforce what was asked, or broke while running. */
export class DriverError extends AlephError {
  readonly driver: string;
  constructor(
    code:
      | 'ALEPH_DRIVER_UNAVAILABLE'
      | 'ALEPH_HELPER_MISSING'
      | 'ALEPH_DRIVER_FAILED'
      | 'ALEPH_CAPABILITY_UNSUPPORTED',
    driver: string,
    message: string,
    options: AlephErrorOptions = {},
  ) {
    super(code, message, { ...options, details: { driver, ...options.details } });
    this.driver = driver;
  }
}
Object.defineProperty(DriverError.prototype, 'name', { value: 'DriverError' });

/**
 * The spec's `SandboxError`: every error `Sandbox.execute` rejects with is an {@link AlephError}.
 */
export type SandboxError = AlephError;

/**
 * True when `value` is an Aleph error (from any copy of this package), optionally with the given code.
 *
 * @example
 * ```ts
 * if (isAlephError(err, 'ALEPH_CAPABILITY_DENIED')) askUser()
 * ```
 */
export function isAlephError(value: unknown, code?: AlephErrorCode): value is AlephError {
  if (typeof value !== 'object' || value === null) return false;
  if ((value as Record<symbol, unknown>)[BRAND] !== true) return false;
  return code === undefined || (value as AlephError).code === code;
}

/** A short, printable rendering of an offending value for error messages. */
export function describeValue(value: unknown): string {
  if (value === undefined) return 'undefined';
  if (typeof value === 'string') {
    const shown = value.length > 80 ? `${value.slice(0, 77)}...` : value;
    return JSON.stringify(shown);
  }
  if (typeof value === 'bigint') return `${value}n`;
  if (typeof value === 'function') return 'a function';
  if (typeof value === 'symbol') return value.toString();
  try {
    const json = JSON.stringify(value);
    if (json === undefined) return String(value);
    return json.length > 80 ? `${json.slice(0, 77)}...` : json;
  } catch {
    return Object.prototype.toString.call(value);
  }
}
