/**
 * `--json` means JSON for every outcome: when a subcommand that takes `--json` fails before it has a
 * result (a usage error, a config error, a state directory it cannot make, a sandbox it cannot build),
 * stdout gets one line `{"error": {"code", "message", "field"?, "value"?, "fix"?}}` and stderr the same
 * message as without `--json`; the exit code is the same either way.
 */
import type { UsageError } from './help.js';
import { unknownOption } from './unknown-option.js';

/** The `error` member of a `--json` failure. */
export interface JsonError {
  /** `ALEPH_USAGE` for bad flags or arguments, else the `ALEPH_*` code of what failed. */
  readonly code: string;
  /** One line, the one stderr gets. */
  readonly message: string;
  /** The flag, argument or config key at fault, when one is. */
  readonly field?: string;
  /** The value given, when there was one. */
  readonly value?: string;
  /** What to do instead, when known. */
  readonly fix?: string;
}

/**
 * Whether `argv` (the CLI's arguments, subcommand first) asks for JSON: `--json` among the subcommand's
 * flags, before any `--` (whatever the subcommand: `run`, `profile`, `doctor`, `gc` and any added later;
 * `policy` and `proxy` answer in their own CLIs).
 */
export function jsonRequested(argv: readonly string[]): boolean {
  const [command, ...rest] = argv;
  if (command === undefined) return false;
  const end = rest.indexOf('--');
  return (end === -1 ? rest : rest.slice(0, end)).includes('--json');
}

function text(v: unknown): string | undefined {
  if (v === undefined || v === null) return undefined;
  return typeof v === 'string' ? v : JSON.stringify(v);
}

/** The one line a failure is said in (stderr, and `message` in JSON). */
export function errorLine(error: unknown, command: string): string {
  const e = error as Error & { code?: string };
  const message = e.code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' ? unknownOption(e.message, command) : e.message;
  return String(message).split('\n')[0] as string;
}

/**
 * What `error` is in JSON: a {@link UsageError} or Node's own argument error as `ALEPH_USAGE` with the
 * flag it names, an `AlephError` with its code and its `field`/`value`/`fix` details.
 */
export function jsonError(error: unknown, command: string): JsonError {
  const e = error as Partial<Omit<UsageError, 'code'>> & {
    code?: string;
    details?: Record<string, unknown>;
  };
  const message = errorLine(error, command);
  const node = e.code?.startsWith('ERR_PARSE_ARGS') === true;
  const code = node ? 'ALEPH_USAGE' : (e.code ?? 'ALEPH_DRIVER_FAILED');
  const option = node ? /'(--?[^' =]+)/.exec(String(e.message))?.[1] : undefined;
  const field = text(e.field ?? e.details?.field) ?? option;
  const value = text(e.value ?? e.details?.value);
  const fix =
    text(e.fix ?? e.details?.fix) ??
    (e.code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' ? `see aleph-sandbox ${command} --help` : undefined);
  return {
    code,
    message,
    ...(field === undefined ? {} : { field }),
    ...(value === undefined ? {} : { value }),
    ...(fix === undefined ? {} : { fix }),
  };
}
