// An in-memory SandboxFiles for MockSandbox sessions: the file API's shape and errors, no disk.
import path from 'node:path';
import { FileAccessError, type FileErrorCode, type FileOperation } from '../file-errors.js';
import { checkPath, contentChunks, decoderFor, toReadableStream } from '../files/file-input.js';
import { selectLines } from '../files/line-range.js';
import {
  type DirectoryEntry,
  type FileStat,
  type ListOptions,
  pageOfEntries,
  type SandboxFiles,
  type WriteFileContent,
} from '../files/types.js';

/** One call a {@link MemoryFiles} received. */
export interface MemoryFileCall {
  readonly operation: FileOperation;
  readonly path: string;
}

/**
 * Files in memory under a pretend workspace `root`: relative paths, or absolute ones inside `root`.
 *
 * @example
 * ```ts
 * const files = new MemoryFiles('/workspace')
 * await files.writeFile('a/b.txt', 'hi')
 * files.files.get('a/b.txt') // Uint8Array of 'hi'
 * ```
 */
export class MemoryFiles implements SandboxFiles {
  /** File contents by path relative to the root (`a/b.txt`). */
  readonly files = new Map<string, Uint8Array>();
  /** Directories by relative path (`''` is the root). */
  readonly directories = new Set<string>(['']);
  readonly calls: MemoryFileCall[] = [];
  readonly #mtimes = new Map<string, number>();

  constructor(readonly root = '/workspace') {}

  #rel(operation: FileOperation, raw: unknown): string {
    const p = checkPath(operation, raw);
    this.calls.push({ operation, path: p });
    const abs = path.posix.resolve(this.root, p);
    const rel = path.posix.relative(this.root, abs);
    if (rel.startsWith('..') || path.posix.isAbsolute(rel)) {
      throw this.#error(
        'ALEPH_PATH_OUTSIDE_WORKSPACE',
        operation,
        p,
        `is outside the workspace ${this.root}`,
      );
    }
    return rel;
  }

  #error(code: FileErrorCode, operation: FileOperation, p: string, reason: string): FileAccessError {
    return new FileAccessError(code, { operation, path: p, reason, fix: 'pass another path' });
  }

  #file(operation: FileOperation, raw: string): Uint8Array {
    const rel = this.#rel(operation, raw);
    const bytes = this.files.get(rel);
    if (bytes !== undefined) return bytes;
    if (this.directories.has(rel))
      throw this.#error('ALEPH_IS_A_DIRECTORY', operation, raw, 'is a directory');
    throw this.#error('ALEPH_FILE_NOT_FOUND', operation, raw, 'does not exist');
  }

  async readFile(p: string): Promise<Uint8Array> {
    return this.#file('readFile', p);
  }

  async readFileStream(p: string): Promise<ReadableStream<Uint8Array>> {
    return toReadableStream(contentChunks(this.#file('readFileStream', p)));
  }

  async readTextFile(
    p: string,
    options: { startLine?: number; endLine?: number; encoding?: string } = {},
  ): Promise<string> {
    const text = decoderFor(options.encoding).decode(this.#file('readTextFile', p));
    return options.startLine === undefined && options.endLine === undefined
      ? text
      : selectLines(text, options.startLine, options.endLine);
  }

  async writeFile(p: string, content: WriteFileContent): Promise<void> {
    const rel = this.#rel('writeFile', p);
    if (this.directories.has(rel))
      throw this.#error('ALEPH_IS_A_DIRECTORY', 'writeFile', p, 'is a directory');
    const chunks: Uint8Array[] = [];
    for await (const chunk of contentChunks(content)) chunks.push(chunk);
    for (let dir = path.posix.dirname(rel); dir !== '.' && dir !== ''; dir = path.posix.dirname(dir)) {
      if (this.files.has(dir))
        throw this.#error('ALEPH_NOT_A_DIRECTORY', 'writeFile', p, `has a file ${dir} on the way`);
      this.directories.add(dir);
    }
    this.files.set(rel, new Uint8Array(Buffer.concat(chunks)));
    this.#mtimes.set(rel, Date.now());
  }

  async stat(p: string): Promise<FileStat> {
    const rel = this.#rel('stat', p);
    const bytes = this.files.get(rel);
    if (bytes !== undefined) {
      return { type: 'file', size: bytes.byteLength, mode: 0o644, mtimeMs: this.#mtimes.get(rel) ?? 0 };
    }
    if (this.directories.has(rel)) return { type: 'directory', size: 0, mode: 0o755, mtimeMs: 0 };
    throw this.#error('ALEPH_FILE_NOT_FOUND', 'stat', p, 'does not exist');
  }

  async list(p: string, options?: ListOptions): Promise<DirectoryEntry[]> {
    const rel = this.#rel('list', p);
    if (this.files.has(rel)) throw this.#error('ALEPH_NOT_A_DIRECTORY', 'list', p, 'is not a directory');
    if (!this.directories.has(rel)) throw this.#error('ALEPH_FILE_NOT_FOUND', 'list', p, 'does not exist');
    const prefix = rel === '' ? '' : `${rel}/`;
    const entries = new Map<string, DirectoryEntry>();
    const add = (key: string, type: 'file' | 'directory') => {
      if (key === rel || !key.startsWith(prefix)) return;
      const name = key.slice(prefix.length);
      if (!name.includes('/')) entries.set(name, { name, type });
    };
    for (const key of this.files.keys()) add(key, 'file');
    for (const key of this.directories) add(key, 'directory');
    const sorted = [...entries.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    return pageOfEntries(sorted, options);
  }

  async delete(p: string, options: { recursive?: boolean } = {}): Promise<void> {
    const rel = this.#rel('delete', p);
    if (this.files.delete(rel)) return;
    if (rel === '') throw this.#error('ALEPH_INVALID_PATH', 'delete', p, 'is the workspace root');
    if (!this.directories.has(rel)) throw this.#error('ALEPH_FILE_NOT_FOUND', 'delete', p, 'does not exist');
    if (options.recursive !== true) throw this.#error('ALEPH_IS_A_DIRECTORY', 'delete', p, 'is a directory');
    for (const key of [...this.files.keys()]) if (key.startsWith(`${rel}/`)) this.files.delete(key);
    for (const key of [...this.directories])
      if (key === rel || key.startsWith(`${rel}/`)) this.directories.delete(key);
  }
}
