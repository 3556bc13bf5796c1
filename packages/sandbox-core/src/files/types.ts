// The public shape of a session's file API (SandboxFiles) and of what it returns. The pipeline that
// implements it is session-files.ts; the driver seam under it is driver-files.ts.

/** What a path names. Symbolic links are only reported where they are not followed. */
export type FileType = 'file' | 'directory' | 'symlink' | 'other';

/** What {@link SandboxFiles.stat} tells about a path. */
export interface FileStat {
  readonly type: FileType;
  /** Size in bytes (for a directory, what the file system says). */
  readonly size: number;
  /** Permission bits (`0o644`, …), set-id and sticky bits included as the file system has them. */
  readonly mode: number;
  /** Last modification, in milliseconds since the epoch. */
  readonly mtimeMs: number;
}

/** One entry of {@link SandboxFiles.list}: its name in the directory and its type (links not followed). */
export interface DirectoryEntry {
  readonly name: string;
  readonly type: FileType;
}

/**
 * Options of {@link SandboxFiles.list}: a page of the sorted entries. Without them the whole directory is
 * listed; to read a large one in bounded pages, pass `limit` and then, for each next page, the last name
 * of the page before as `after`.
 */
export interface ListOptions {
  /** Only the entries whose name sorts after this one (code units). */
  readonly after?: string;
  /** At most this many entries (a positive integer). */
  readonly limit?: number;
}

/** Options of {@link SandboxFiles.readFile}. */
export interface ReadFileOptions {
  readonly signal?: AbortSignal;
  /** Refuse a file larger than this with `ALEPH_FILE_TOO_LARGE`. Default 64 MiB. */
  readonly maxBytes?: number;
}

/** Options of {@link SandboxFiles.readFileStream} (a stream has no size limit). */
export interface ReadFileStreamOptions {
  readonly signal?: AbortSignal;
}

/** Options of {@link SandboxFiles.readTextFile}. */
export interface ReadTextFileOptions extends ReadFileOptions {
  /** First line to return, 1-based, inclusive. Default 1. */
  readonly startLine?: number;
  /** Last line to return, 1-based, inclusive; past the end reads to the end. Default: the last line. */
  readonly endLine?: number;
  /** A `TextDecoder` label. Default `'utf-8'`. */
  readonly encoding?: string;
}

/** What {@link SandboxFiles.writeFile} writes: text (UTF-8), bytes, or a stream of chunks. */
export type WriteFileContent = string | Uint8Array | ReadableStream<Uint8Array> | AsyncIterable<Uint8Array>;

/** Options of {@link SandboxFiles.writeFile}. */
export interface WriteFileOptions {
  /**
   * Permission bits of the file. Masked with `0o777`: set-id and sticky bits are never set. Default: the
   * replaced file's permission bits, else `0o644`.
   */
  readonly mode?: number;
  readonly signal?: AbortSignal;
  /** Refuse content longer than this with `ALEPH_FILE_TOO_LARGE` (nothing is written). Default: none. */
  readonly maxBytes?: number;
}

/** Options of {@link SandboxFiles.stat}. */
export interface StatOptions {
  /** Follow a final symbolic link (inside the root). Default true; false reports it as `'symlink'`. */
  readonly followSymlinks?: boolean;
}

/** Options of {@link SandboxFiles.delete}. */
export interface DeleteOptions {
  /** Delete a directory and everything in it (links inside are removed, never followed). Default false. */
  readonly recursive?: boolean;
}

/**
 * A session's files, read and written from the host without ever leaving the session's workspace (and
 * the fsRead/fsWrite grants it holds). Every path is resolved on descriptors, beneath its root: a symbolic
 * link is followed only while it stays inside that root, so a link a command planted to a host secret is
 * refused with `ALEPH_PATH_OUTSIDE_WORKSPACE`, never read or written. Paths are relative to the workspace
 * root, or absolute inside the workspace or a grant.
 *
 * Writes create missing parent directories, replace the file atomically (a temp file `.NAME.aleph-…` in
 * the same directory, renamed over it), keep the ownership of the root's owner (a root host writes as
 * the workspace's owner), and never set set-id bits. Protected paths (git's control files, `.envrc`,
 * editor and agent settings, home startup files) are refused for writes and deletes, as inside the
 * sandbox; hidden paths (the vault, the audit log, session homes) for everything. Each call publishes
 * one `file_operation` record on `aleph:capability_ledger`.
 *
 * Every method rejects with a `FileAccessError` (`ALEPH_FILE_NOT_FOUND`, `ALEPH_PATH_OUTSIDE_WORKSPACE`,
 * `ALEPH_PATH_PROTECTED`, `ALEPH_NOT_A_DIRECTORY`, `ALEPH_IS_A_DIRECTORY`, `ALEPH_FILE_TOO_LARGE`,
 * `ALEPH_FILE_PERMISSION_DENIED`, `ALEPH_INVALID_PATH`), or with `ALEPH_SESSION_CLOSED`,
 * `ALEPH_DISPOSED`, `ALEPH_ABORTED`, `ALEPH_CAPABILITY_UNSUPPORTED` (a driver without a safe file
 * mechanism), `ALEPH_INVALID_COMMAND` (bad options).
 *
 * @example
 * ```ts
 * const session = sandbox.session('chat-1')
 * await session.files.writeFile('src/app.ts', 'export {}\n')
 * const head = await session.files.readTextFile('src/app.ts', { startLine: 1, endLine: 20 })
 * for (const entry of await session.files.list('src')) console.log(entry.name, entry.type)
 * ```
 */
export interface SandboxFiles {
  /** The file's bytes. A symbolic link inside the root is followed. */
  readFile(path: string, options?: ReadFileOptions): Promise<Uint8Array>;
  /** The file's bytes as a stream (no size limit), opened before it resolves. */
  readFileStream(path: string, options?: ReadFileStreamOptions): Promise<ReadableStream<Uint8Array>>;
  /**
   * The file as text, or lines `startLine`..`endLine` of it (1-based, inclusive). Lines end at `\n`;
   * each returned line keeps its terminator (`\r\n` too), so consecutive ranges concatenate back to the
   * file. Lines 2-3 of `"a\nb\nc\nd\n"` are `"b\nc\n"`.
   */
  readTextFile(path: string, options?: ReadTextFileOptions): Promise<string>;
  /**
   * Writes the file, creating missing parents (`0o755`), replacing it atomically. A final symbolic link is
   * refused (`ALEPH_INVALID_PATH`, naming its target) rather than written through or replaced: the file
   * written is always the path named.
   */
  writeFile(path: string, content: WriteFileContent, options?: WriteFileOptions): Promise<void>;
  /** What the path is; follows a final symbolic link inside the root unless `followSymlinks: false`. */
  stat(path: string, options?: StatOptions): Promise<FileStat>;
  /**
   * The directory's entries, sorted by name (code units), symbolic links not followed; with `options`, the
   * page of them after `options.after`, at most `options.limit` long (see {@link ListOptions}).
   */
  list(path: string, options?: ListOptions): Promise<DirectoryEntry[]>;
  /**
   * Deletes a file or a symbolic link (the link itself), or a directory with `recursive: true`
   * (`ALEPH_IS_A_DIRECTORY` without it). The workspace root itself cannot be deleted.
   */
  delete(path: string, options?: DeleteOptions): Promise<void>;
}

/**
 * The page `options` asks for of `sorted` (entries sorted by name, code units): those after
 * `options.after`, at most `options.limit`. File API implementations share it.
 */
export function pageOfEntries(
  sorted: readonly DirectoryEntry[],
  options: ListOptions = {},
): DirectoryEntry[] {
  const { after, limit } = options;
  let from = 0;
  if (after !== undefined) {
    let lo = 0;
    let hi = sorted.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if ((sorted[mid] as DirectoryEntry).name <= after) lo = mid + 1;
      else hi = mid;
    }
    from = lo;
  }
  return sorted.slice(from, limit === undefined ? undefined : from + limit);
}
