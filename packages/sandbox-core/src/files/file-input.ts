// The public edge of the file API: a path checked (a non-empty string without NUL) and placed in the root
// it lies in (the workspace or a grant), the options checked, and write content turned into chunks.
import path from 'node:path';
import { isPathWithin } from '../capabilities.js';
import { InvalidInputError } from '../errors.js';
import { FileAccessError, type FileOperation } from '../file-errors.js';
import type { FileRoot } from './file-rules.js';
import type { WriteFileContent } from './types.js';

/** Where a checked path lies: its root and the components below it. */
export interface PlacedPath {
  readonly root: FileRoot;
  readonly components: readonly string[];
}

const PATH_FIX = 'pass a non-empty path without NUL bytes, relative to the workspace or absolute inside it';

/**
 * The path, checked.
 *
 * @throws {FileAccessError} `ALEPH_INVALID_PATH` for a non-string, an empty string or a NUL byte.
 */
export function checkPath(operation: FileOperation, value: unknown): string {
  const problem =
    typeof value !== 'string'
      ? `is a ${value === null ? 'null' : typeof value}, not a string`
      : value === ''
        ? 'is empty'
        : value.includes('\0')
          ? 'contains a NUL byte'
          : undefined;
  if (problem === undefined) return value as string;
  throw new FileAccessError('ALEPH_INVALID_PATH', {
    operation,
    path: typeof value === 'string' ? value : String(value),
    reason: problem,
    fix: PATH_FIX,
  });
}

/**
 * Places `p` in a root: a relative path below the workspace (`roots[0]`), an absolute one in the deepest
 * root holding it (by its real path or its alias). `..` is resolved lexically first (it cannot climb out).
 *
 * @throws {FileAccessError} `ALEPH_PATH_OUTSIDE_WORKSPACE` outside every root, or in a read-only grant for
 *   a write.
 */
export function placePath(
  operation: FileOperation,
  p: string,
  roots: readonly FileRoot[],
  write: boolean,
): PlacedPath {
  const workspace = roots[0] as FileRoot;
  const absolute = path.isAbsolute(p) ? path.resolve(p) : path.resolve(workspace.path, p);
  let best: { root: FileRoot; base: string } | undefined;
  for (const root of roots) {
    for (const base of root.alias === undefined ? [root.path] : [root.path, root.alias]) {
      if (isPathWithin(absolute, base) && (best === undefined || base.length > best.base.length)) {
        best = { root, base };
      }
    }
  }
  const outside = (reason: string, fix: string) =>
    new FileAccessError('ALEPH_PATH_OUTSIDE_WORKSPACE', {
      operation,
      path: p,
      reason,
      fix,
      resolved: absolute,
    });
  if (best === undefined) {
    throw outside(
      `is outside the session workspace ${workspace.path} and every path the session was granted`,
      `pass a path inside ${workspace.path} (relative to it, or absolute), or get an fsRead/fsWrite grant for it first`,
    );
  }
  if (write && !best.root.write) {
    throw outside(
      `is inside ${best.root.path}, which the session may read but not write`,
      'write inside the workspace, or get an fsWrite grant for that path first',
    );
  }
  const rel = path.relative(best.base, absolute);
  return { root: best.root, components: rel === '' ? [] : rel.split(path.sep) };
}

/** A positive integer option, or its default. */
export function checkByteLimit(field: string, value: unknown, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value === 'number' && (Number.isSafeInteger(value) || value === Infinity) && value >= 0) {
    return value;
  }
  throw new InvalidInputError(
    'ALEPH_INVALID_COMMAND',
    field,
    value,
    'is not a number of bytes',
    `pass an integer >= 0, e.g. ${16 * 1024 * 1024}`,
  );
}

/** A 1-based line number option, or undefined. */
export function checkLine(field: string, value: unknown): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 1) return value;
  throw new InvalidInputError(
    'ALEPH_INVALID_COMMAND',
    field,
    value,
    'is not a line number',
    'pass an integer >= 1 (lines are numbered from 1)',
  );
}

/** The options of a `list` call, checked. */
export function checkListOptions(options: unknown): { after?: string; limit?: number } {
  if (options === undefined) return {};
  const o = (typeof options === 'object' && options !== null ? options : {}) as {
    after?: unknown;
    limit?: unknown;
  };
  if (o.after !== undefined && typeof o.after !== 'string')
    throw new InvalidInputError(
      'ALEPH_INVALID_COMMAND',
      'list options.after',
      o.after,
      'is not a name',
      'pass the last name of the page before, or leave it out for the first page',
    );
  if (
    o.limit !== undefined &&
    !(typeof o.limit === 'number' && Number.isSafeInteger(o.limit) && o.limit >= 1)
  )
    throw new InvalidInputError(
      'ALEPH_INVALID_COMMAND',
      'list options.limit',
      o.limit,
      'is not a number of entries',
      'pass an integer >= 1, or leave it out to list the whole directory',
    );
  return {
    ...(o.after === undefined ? {} : { after: o.after as string }),
    ...(o.limit === undefined ? {} : { limit: o.limit as number }),
  };
}

/** A `TextDecoder` for `encoding`. */
export function decoderFor(encoding: unknown): InstanceType<typeof TextDecoder> {
  try {
    return new TextDecoder(encoding === undefined ? 'utf-8' : String(encoding), { fatal: false });
  } catch {
    throw new InvalidInputError(
      'ALEPH_INVALID_COMMAND',
      'readTextFile options.encoding',
      encoding,
      'is not an encoding TextDecoder knows',
      "pass e.g. 'utf-8', 'utf-16le' or 'latin1'",
    );
  }
}

/** The permission bits a write may set: `mode & 0o777` (no set-id, no sticky), or undefined. */
export function checkMode(value: unknown): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 && value <= 0o7777) {
    return value & 0o777;
  }
  throw new InvalidInputError(
    'ALEPH_INVALID_COMMAND',
    'writeFile options.mode',
    value,
    'is not a permission mode',
    'pass permission bits such as 0o644 (set-id and sticky bits are never set)',
  );
}

/**
 * Write content as chunks.
 *
 * @throws {InvalidInputError} `ALEPH_INVALID_COMMAND` for anything but text, bytes or a stream of bytes.
 */
export function contentChunks(content: WriteFileContent): AsyncIterable<Uint8Array> {
  if (typeof content === 'string') return single(Buffer.from(content, 'utf8'));
  if (content instanceof Uint8Array) return single(content);
  if (
    typeof content === 'object' &&
    content !== null &&
    typeof (content as AsyncIterable<Uint8Array>)[Symbol.asyncIterator] === 'function'
  ) {
    return checked(content as AsyncIterable<Uint8Array>);
  }
  throw new InvalidInputError(
    'ALEPH_INVALID_COMMAND',
    'writeFile content',
    content,
    'is not text, bytes or a stream of bytes',
    'pass a string, a Uint8Array, a ReadableStream<Uint8Array> or an AsyncIterable<Uint8Array>',
  );
}

async function* single(bytes: Uint8Array): AsyncIterable<Uint8Array> {
  yield bytes;
}

async function* checked(source: AsyncIterable<Uint8Array>): AsyncIterable<Uint8Array> {
  for await (const chunk of source) {
    if (!(chunk instanceof Uint8Array)) {
      throw new InvalidInputError(
        'ALEPH_INVALID_COMMAND',
        'writeFile content chunk',
        chunk,
        'is not a Uint8Array',
        'stream Uint8Array chunks (encode text with TextEncoder)',
      );
    }
    yield chunk;
  }
}

/** A web stream over `source` (pulled on demand; cancelling it stops the source). */
export function toReadableStream(source: AsyncIterable<Uint8Array>): ReadableStream<Uint8Array> {
  const iterator = source[Symbol.asyncIterator]();
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const next = await iterator.next();
      if (next.done === true) controller.close();
      else controller.enqueue(next.value);
    },
    async cancel() {
      await iterator.return?.();
    },
  });
}
