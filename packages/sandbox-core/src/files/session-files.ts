// A session's SandboxFiles on the pipeline: each call is checked (path, options, session open), placed
// in a root, handed to the driver's file mechanism with the rules it must check, mapped to typed errors,
// and audited once (a `file_operation` record on aleph:capability_ledger).
import { type FileOperationRecord, publishLedgerRecord } from '../audit.js';
import type { OsSandboxDriver } from '../driver.js';
import { DriverError } from '../errors.js';
import { FileAccessError, type FileErrorCode, type FileOperation } from '../file-errors.js';
import { monotonicMs } from '../internal/clock.js';
import type { SessionWorkspace } from '../pipeline-steps.js';
import type { SessionId } from '../session.js';
import type { DriverFiles, DriverFileTarget } from './driver-files.js';
import { defaultFix, fileAborted, toFileError } from './errno.js';
import {
  checkByteLimit,
  checkLine,
  checkListOptions,
  checkMode,
  checkPath,
  contentChunks,
  decoderFor,
  placePath,
  toReadableStream,
} from './file-input.js';
import { FileRootResolver } from './file-roots.js';
import { checkFileAction } from './file-rules.js';
import { selectLines } from './line-range.js';
import type {
  DeleteOptions,
  DirectoryEntry,
  FileStat,
  ListOptions,
  ReadFileOptions,
  ReadFileStreamOptions,
  ReadTextFileOptions,
  SandboxFiles,
  StatOptions,
  WriteFileContent,
  WriteFileOptions,
} from './types.js';
import { pageOfEntries } from './types.js';

/** A buffered read refuses files above this size unless `maxBytes` says otherwise: 64 MiB. */
export const DEFAULT_MAX_READ_BYTES = 64 * 1024 * 1024;

/** What the file API needs of its sandbox and session handle. */
export interface FilesHost {
  readonly driver: OsSandboxDriver;
  forSession(sessionId: SessionId): Promise<SessionWorkspace>;
  workspacePath(sessionId: SessionId): string;
  /** Throws when the session handle is closed or the sandbox disposed. */
  assertOpen(): void;
}

interface Call {
  readonly target: DriverFileTarget;
  readonly mechanism: DriverFiles;
  /** The directory the path resolved to, as checked (for list filtering). */
  resolved(): string | undefined;
  hidden(path: string): boolean;
}

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

/**
 * The {@link SandboxFiles} of one session on `host`.
 *
 * @example
 * ```ts
 * const files = createSessionFiles(host, 'chat-1')
 * await files.writeFile('a.txt', 'hi')
 * ```
 */
export function createSessionFiles(host: FilesHost, sessionId: SessionId): SandboxFiles {
  return new SessionFiles(host, sessionId);
}

class SessionFiles implements SandboxFiles {
  readonly #host: FilesHost;
  readonly #sessionId: SessionId;
  #mechanism: DriverFiles | undefined;
  #resolver: FileRootResolver | undefined;

  constructor(host: FilesHost, sessionId: SessionId) {
    this.#host = host;
    this.#sessionId = sessionId;
  }

  /** The target of one call, checked and placed; `resolved` is where the driver said it resolved. */
  async #prepare(
    operation: FileOperation,
    rawPath: unknown,
    write: boolean,
    record: Mutable<FileOperationRecord>,
    resolved: { at?: string },
  ): Promise<Call> {
    const host = this.#host;
    const p = checkPath(operation, rawPath);
    const ws = await host.forSession(this.#sessionId);
    record.workspace = ws.cwd;
    if (host.driver.files === undefined) throw unsupported(host.driver.name, operation);
    this.#mechanism ??= host.driver.files({ sessionId: this.#sessionId, workspace: ws.cwd });
    this.#resolver ??= new FileRootResolver(this.#mechanism.rules);
    const roots = await this.#resolver.roots(ws, host.workspacePath(this.#sessionId));
    const rules = await this.#resolver.resolve(roots);
    const placed = placePath(operation, p, roots, write);
    const error = (code: FileErrorCode, reason: string, fix?: string) =>
      new FileAccessError(code, {
        operation,
        path: p,
        reason,
        fix: fix ?? defaultFix(code, ws.cwd),
        ...(resolved.at === undefined ? {} : { resolved: resolved.at }),
      });
    const target: DriverFileTarget = {
      root: placed.root.path,
      components: placed.components,
      path: p,
      operation,
      check(at, action, kind) {
        resolved.at = at;
        const refusal = checkFileAction(rules, at, action, kind);
        if (refusal !== undefined) throw error(refusal.code, refusal.reason, refusal.fix);
      },
      error,
    };
    return {
      target,
      mechanism: this.#mechanism,
      resolved: () => resolved.at,
      hidden: (at) => checkFileAction(rules, at, 'read', 'other') !== undefined,
    };
  }

  /** One audited call: checks, `act`, error mapping, one `file_operation` record. */
  async #run<R>(
    operation: FileOperation,
    rawPath: unknown,
    write: boolean,
    signal: AbortSignal | undefined,
    act: (call: Call) => Promise<R>,
    bytesOf?: (result: R) => number | undefined,
  ): Promise<R> {
    const host = this.#host;
    const t0 = monotonicMs();
    const record: Mutable<FileOperationRecord> = {
      type: 'file_operation',
      time: new Date().toISOString(),
      sessionId: this.#sessionId,
      workspace: null,
      operation,
      path: typeof rawPath === 'string' ? rawPath : String(rawPath),
      outcome: 'error',
      durationMs: 0,
      driver: host.driver.name,
    };
    const resolved: { at?: string } = {};
    try {
      host.assertOpen();
      if (signal?.aborted) throw fileAborted(operation, signal);
      const result = await act(await this.#prepare(operation, rawPath, write, record, resolved));
      record.outcome = 'ok';
      const bytes = bytesOf?.(result);
      if (bytes !== undefined) record.bytes = bytes;
      return result;
    } catch (error) {
      const failure =
        signal?.aborted && !(error instanceof FileAccessError)
          ? fileAborted(operation, signal)
          : toFileError(error, {
              operation,
              path: record.path,
              workspace: record.workspace ?? host.workspacePath(this.#sessionId),
              driver: host.driver.name,
              resolved: resolved.at,
            });
      record.error = { code: failure.code, reason: failure.message };
      throw failure;
    } finally {
      if (resolved.at !== undefined) record.resolved = resolved.at;
      record.durationMs = monotonicMs() - t0;
      publishLedgerRecord(record);
    }
  }

  #read(operation: FileOperation, path: string, options: ReadFileOptions | undefined): Promise<Uint8Array> {
    const maxBytes = checkByteLimit(
      `${operation} options.maxBytes`,
      options?.maxBytes,
      DEFAULT_MAX_READ_BYTES,
    );
    return this.#run(
      operation,
      path,
      false,
      options?.signal,
      ({ target, mechanism }) => mechanism.read(target, { maxBytes, signal: options?.signal }),
      (bytes) => bytes.byteLength,
    );
  }

  readFile(path: string, options?: ReadFileOptions): Promise<Uint8Array> {
    return this.#read('readFile', path, options);
  }

  async readTextFile(path: string, options: ReadTextFileOptions = {}): Promise<string> {
    const startLine = checkLine('readTextFile options.startLine', options.startLine);
    const endLine = checkLine('readTextFile options.endLine', options.endLine);
    const decoder = decoderFor(options.encoding);
    const text = decoder.decode(await this.#read('readTextFile', path, options));
    return startLine === undefined && endLine === undefined ? text : selectLines(text, startLine, endLine);
  }

  readFileStream(path: string, options: ReadFileStreamOptions = {}): Promise<ReadableStream<Uint8Array>> {
    return this.#run('readFileStream', path, false, options.signal, async ({ target, mechanism }) =>
      toReadableStream(await mechanism.readStream(target, { signal: options.signal })),
    );
  }

  async writeFile(path: string, content: WriteFileContent, options: WriteFileOptions = {}): Promise<void> {
    const mode = checkMode(options.mode);
    const maxBytes = checkByteLimit('writeFile options.maxBytes', options.maxBytes, Number.POSITIVE_INFINITY);
    const chunks = contentChunks(content);
    await this.#run(
      'writeFile',
      path,
      true,
      options.signal,
      ({ target, mechanism }) => mechanism.write(target, chunks, { mode, maxBytes, signal: options.signal }),
      (r) => r.bytes,
    );
  }

  stat(path: string, options: StatOptions = {}): Promise<FileStat> {
    return this.#run('stat', path, false, undefined, ({ target, mechanism }) =>
      mechanism.stat(target, { followSymlinks: options.followSymlinks !== false }),
    );
  }

  async list(path: string, options?: ListOptions): Promise<DirectoryEntry[]> {
    const page = checkListOptions(options);
    return await this.#run(
      'list',
      path,
      false,
      undefined,
      async ({ target, mechanism, resolved, hidden }) => {
        const entries = await mechanism.list(target);
        const dir = resolved() ?? target.root;
        const sorted = entries
          .filter((e) => !hidden(dir === '/' ? `/${e.name}` : `${dir}/${e.name}`))
          .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
        return pageOfEntries(sorted, page);
      },
    );
  }

  delete(path: string, options: DeleteOptions = {}): Promise<void> {
    return this.#run('delete', path, true, undefined, async ({ target, mechanism }) => {
      if (target.components.length === 0) {
        throw target.error(
          'ALEPH_INVALID_PATH',
          `is the root ${target.root} itself, which file calls never delete`,
          'delete what is inside it instead',
        );
      }
      await mechanism.delete(target, { recursive: options.recursive === true });
    });
  }
}

function unsupported(driver: string, operation: FileOperation): DriverError {
  return new DriverError(
    'ALEPH_CAPABILITY_UNSUPPORTED',
    driver,
    `${operation}: driver ${driver} has no safe file mechanism (files()), so file calls are refused rather than done by paths a sandboxed command could redirect; run the file operation as a sandboxed command instead`,
    { details: { missing: ['files'] } },
  );
}
