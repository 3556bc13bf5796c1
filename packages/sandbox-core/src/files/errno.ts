// Turns what a driver's file mechanism threw (an errno from the file system, or anything else) into the
// file API's typed errors, and gives each code its usual fix.
import { AlephError, DriverError, isAlephError } from '../errors.js';
import { FileAccessError, type FileErrorCode, type FileOperation } from '../file-errors.js';

/** The usual fix of each code, for the workspace `workspace`. */
export function defaultFix(code: FileErrorCode, workspace: string): string {
  switch (code) {
    case 'ALEPH_FILE_NOT_FOUND':
      return 'check the path (list its directory to see what is there)';
    case 'ALEPH_PATH_OUTSIDE_WORKSPACE':
      return `pass a path inside the session workspace ${workspace} or a path the session was granted`;
    case 'ALEPH_PATH_PROTECTED':
      return 'leave it alone, or change it yourself outside the sandbox';
    case 'ALEPH_NOT_A_DIRECTORY':
      return 'pass the path of a directory';
    case 'ALEPH_IS_A_DIRECTORY':
      return 'pass the path of a file (delete a directory with { recursive: true })';
    case 'ALEPH_FILE_TOO_LARGE':
      return 'raise maxBytes, or read it with readFileStream';
    case 'ALEPH_FILE_PERMISSION_DENIED':
      return 'this process may not access it; change its permissions (e.g. with chmod in a sandboxed command)';
    case 'ALEPH_INVALID_PATH':
      return 'pass a non-empty path without NUL bytes, relative to the workspace or absolute inside it';
  }
}

const ERRNO: Readonly<Record<string, { code: FileErrorCode; reason: string }>> = {
  ENOENT: { code: 'ALEPH_FILE_NOT_FOUND', reason: 'does not exist' },
  ENOTDIR: { code: 'ALEPH_NOT_A_DIRECTORY', reason: 'is not a directory, or a component of it is not' },
  EISDIR: { code: 'ALEPH_IS_A_DIRECTORY', reason: 'is a directory' },
  ENOTEMPTY: { code: 'ALEPH_IS_A_DIRECTORY', reason: 'is a directory that is not empty' },
  EACCES: { code: 'ALEPH_FILE_PERMISSION_DENIED', reason: 'may not be accessed by this process (EACCES)' },
  EPERM: { code: 'ALEPH_FILE_PERMISSION_DENIED', reason: 'may not be changed by this process (EPERM)' },
  EROFS: { code: 'ALEPH_FILE_PERMISSION_DENIED', reason: 'is on a read-only file system' },
  ETXTBSY: { code: 'ALEPH_FILE_PERMISSION_DENIED', reason: 'is a program being run (ETXTBSY)' },
  ENAMETOOLONG: { code: 'ALEPH_INVALID_PATH', reason: 'is too long, or has a component that is too long' },
  ELOOP: {
    code: 'ALEPH_INVALID_PATH',
    reason: 'became a symbolic link while it was being opened (it is never followed)',
  },
  EFBIG: { code: 'ALEPH_FILE_TOO_LARGE', reason: 'is larger than the file system allows' },
  EEXIST: { code: 'ALEPH_INVALID_PATH', reason: 'already exists as something that cannot be replaced' },
};

/**
 * The error a file call rejects with: Aleph errors as they are, an errno mapped to a `FileAccessError`,
 * anything else an `ALEPH_DRIVER_FAILED` `DriverError` (disk full, I/O errors) with its cause.
 */
export function toFileError(
  error: unknown,
  context: {
    readonly operation: FileOperation;
    readonly path: string;
    readonly workspace: string;
    readonly driver: string;
    readonly resolved?: string | undefined;
  },
): AlephError {
  if (isAlephError(error)) return error;
  const errno = (error as { code?: unknown } | null)?.code;
  const known = typeof errno === 'string' ? ERRNO[errno] : undefined;
  if (known !== undefined) {
    return new FileAccessError(known.code, {
      operation: context.operation,
      path: context.path,
      reason: known.reason,
      fix: defaultFix(known.code, context.workspace),
      cause: error,
      ...(context.resolved === undefined ? {} : { resolved: context.resolved }),
    });
  }
  const message = error instanceof Error ? error.message : String(error);
  return new DriverError(
    'ALEPH_DRIVER_FAILED',
    context.driver,
    `${context.operation}: path ${JSON.stringify(context.path)} failed: ${message}`,
    { cause: error },
  );
}

/** `ALEPH_ABORTED` for a file call's signal. */
export function fileAborted(operation: FileOperation, signal: AbortSignal): AlephError {
  return new AlephError('ALEPH_ABORTED', `${operation} was aborted by its AbortSignal`, {
    cause: signal.reason,
  });
}
