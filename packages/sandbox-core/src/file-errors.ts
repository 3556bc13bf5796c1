// The error of the session file API (FileAccessError) and its codes: what a file call refused, on which
// path, why, and how to fix it.
import { AlephError, type AlephErrorOptions, describeValue } from './errors.js';

/** The codes a {@link FileAccessError} carries. Each is listed in `docs/errors.md`. */
export const FILE_ERROR_CODES = [
  'ALEPH_FILE_NOT_FOUND',
  'ALEPH_PATH_OUTSIDE_WORKSPACE',
  'ALEPH_PATH_PROTECTED',
  'ALEPH_NOT_A_DIRECTORY',
  'ALEPH_IS_A_DIRECTORY',
  'ALEPH_FILE_TOO_LARGE',
  'ALEPH_FILE_PERMISSION_DENIED',
  'ALEPH_INVALID_PATH',
] as const;

/** One entry of {@link FILE_ERROR_CODES}. */
export type FileErrorCode = (typeof FILE_ERROR_CODES)[number];

/** The file operations of a session, as named in errors and audit records. */
export type FileOperation =
  | 'readFile'
  | 'readFileStream'
  | 'readTextFile'
  | 'writeFile'
  | 'stat'
  | 'list'
  | 'delete';

/** What a {@link FileAccessError} is built from. */
export interface FileAccessErrorInit extends AlephErrorOptions {
  readonly operation: FileOperation;
  /** The path as the caller gave it. */
  readonly path: string;
  /** What is wrong with it, as a phrase that follows the path: `"does not exist"`. */
  readonly reason: string;
  /** What to do instead. */
  readonly fix: string;
  /** Where the path resolved to, when it got that far. */
  readonly resolved?: string;
}

/**
 * A session file call refused or failed on its path: the message names the operation, the `path` field
 * and its value, why, and the fix. Nothing was changed on disk (a failed write leaves no temp file).
 *
 * @example
 * ```ts
 * try { await session.files.readFile('notes.txt') }
 * catch (e) { if (isAlephError(e, 'ALEPH_FILE_NOT_FOUND')) return null; throw e }
 * ```
 */
export class FileAccessError extends AlephError {
  declare readonly code: FileErrorCode;
  readonly operation: FileOperation;
  readonly path: string;
  readonly reason: string;
  readonly resolved: string | undefined;

  constructor(code: FileErrorCode, init: FileAccessErrorInit) {
    super(code, `${init.operation}: path ${describeValue(init.path)} ${init.reason}; ${init.fix}`, {
      ...(init.cause === undefined ? {} : { cause: init.cause }),
      details: {
        operation: init.operation,
        path: init.path,
        reason: init.reason,
        ...(init.resolved === undefined ? {} : { resolved: init.resolved }),
        ...init.details,
      },
    });
    this.operation = init.operation;
    this.path = init.path;
    this.reason = init.reason;
    this.resolved = init.resolved;
  }
}
Object.defineProperty(FileAccessError.prototype, 'name', { value: 'FileAccessError', configurable: true });
