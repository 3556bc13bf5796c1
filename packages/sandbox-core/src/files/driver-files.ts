// The seam between the session file API and a driver: what the pipeline asks a driver's file mechanism
// to do (DriverFiles), on which target (DriverFileTarget), and the rules the driver's configuration adds.
import type { FileAccessError, FileErrorCode, FileOperation } from '../file-errors.js';
import type { SessionId } from '../session.js';
import type { DirectoryEntry, FileStat } from './types.js';

/**
 * What a driver is about to do on a resolved path, for {@link DriverFileTarget.check}: `read` (read, stat,
 * list), `write` (create or replace a file), `create-directory` (a missing parent), `delete`.
 */
export type FileAction = 'read' | 'write' | 'create-directory' | 'delete';

/**
 * One call's path, as the pipeline hands it to {@link DriverFiles}: already validated (no NUL, not
 * empty), lexically normalised and placed in the root it lies in (the workspace or a grant).
 */
export interface DriverFileTarget {
  /** The root (absolute, symlink-free) where resolution starts and which it must never leave. */
  readonly root: string;
  /** The components below the root (no `''`, `.` or `..`); empty for the root itself. */
  readonly components: readonly string[];
  /** The path as the caller gave it, for messages. */
  readonly path: string;
  readonly operation: FileOperation;
  /**
   * The driver calls this with the absolute path it resolved to (symbolic links inside the root followed
   * on descriptors) before it acts on it, and before it creates each missing parent directory. It throws
   * a `FileAccessError` to refuse (a protected or hidden path); the driver then stops, having changed
   * nothing. `kind` is what is acted on (a delete of a directory is recursive).
   */
  check(resolved: string, action: FileAction, kind: 'file' | 'directory' | 'other'): void;
  /** A `FileAccessError` for this call, with the code's usual fix unless `fix` is given. */
  error(code: FileErrorCode, reason: string, fix?: string): FileAccessError;
}

/** What a driver's file mechanism is created for. */
export interface FilesContext {
  readonly sessionId: SessionId;
  /** The session workspace (realpath). */
  readonly workspace: string;
}

/**
 * The paths a driver's configuration keeps from commands, which its file mechanism keeps from file calls
 * too. Defaults (when a driver gives none): sandbox-core's `DEFAULT_PROTECTED_PATHS`,
 * `DEFAULT_HOME_PROTECTED_PATHS` and `defaultVaultPaths(os.homedir())`.
 */
export interface FileRules {
  /** Relative to each writable root: refused for writes and deletes. */
  readonly protectedPaths: readonly string[];
  /** Relative to each home directory inside a writable root: refused for writes and deletes. */
  readonly homeProtectedPaths: readonly string[];
  /** Absolute: never reachable, whatever is granted (vault, audit log, session homes, driver state). */
  readonly hiddenPaths: readonly string[];
}

/**
 * A driver's platform mechanism for file calls. Each method resolves `target` beneath `target.root` on
 * descriptors, component by component: a symbolic link met on the way is read and resolved lexically (a
 * relative target from the link's directory, an absolute one only when it lies inside the root, `..`
 * popping back, never above the root), with at most 40 links; a link that leaves the root is
 * `ALEPH_PATH_OUTSIDE_WORKSPACE`. The kernel is never asked to follow a link. It calls `target.check`
 * before acting, and rejects with `FileAccessError`s (or errors carrying an errno `code`, which the
 * pipeline maps). Writes go to a temp file `.NAME.aleph-RANDOM` in the target's directory, owned by the
 * root's owner, with no set-id bit, renamed over the target; a failed write removes it.
 */
export interface DriverFiles {
  /** Overrides of the default {@link FileRules} (the driver's configured protected and hidden paths). */
  readonly rules?: Partial<FileRules>;
  stat(target: DriverFileTarget, options: { readonly followSymlinks: boolean }): Promise<FileStat>;
  /** The entries of the directory, in any order (the pipeline sorts and filters them). */
  list(target: DriverFileTarget): Promise<DirectoryEntry[]>;
  /** A regular file's bytes; `ALEPH_FILE_TOO_LARGE` past `maxBytes`. */
  read(
    target: DriverFileTarget,
    options: { readonly maxBytes: number; readonly signal?: AbortSignal | undefined },
  ): Promise<Uint8Array>;
  /** A regular file's bytes as chunks, opened (and checked) before it resolves. */
  readStream(
    target: DriverFileTarget,
    options: { readonly signal?: AbortSignal | undefined },
  ): Promise<AsyncIterable<Uint8Array>>;
  /** Writes `content`, with `mode` already masked to `0o777` (or the replaced file's mode, or `0o644`). */
  write(
    target: DriverFileTarget,
    content: AsyncIterable<Uint8Array>,
    options: {
      readonly mode: number | undefined;
      readonly maxBytes: number;
      readonly signal?: AbortSignal | undefined;
    },
  ): Promise<{ readonly bytes: number }>;
  delete(target: DriverFileTarget, options: { readonly recursive: boolean }): Promise<void>;
}
