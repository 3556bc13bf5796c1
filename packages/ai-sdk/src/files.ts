// Files of the AI SDK session, on the session API's files (resolved beneath the workspace on descriptors,
// never following a link out of it): not found is null (false for a delete), as the AI SDK's contract
// says; everything else the session API refuses rejects with its FileAccessError (path outside, a
// directory where a file is expected, a write through a final link, too large, …). Text line ranges
// follow the AI SDK (its own extractLines: the last line's terminator is not returned).
import { Buffer } from 'node:buffer';
import {
  type Experimental_SandboxDirectoryEntry as AiDirectoryEntry,
  type Experimental_SandboxFileStat as AiFileStat,
  type Experimental_SandboxReadTextFileOptions as AiReadTextOptions,
  type Experimental_SandboxWriteTextFileOptions as AiWriteTextOptions,
  extractLines,
} from '@ai-sdk/provider-utils';
import { type AdapterSession, isAlephError } from '@aleph/sandbox';
import { InvalidInputError } from '@aleph/sandbox-core';

interface PathOptions {
  readonly path: string;
  readonly abortSignal?: AbortSignal;
}

const bad = (field: string, value: unknown, problem: string, fix: string) =>
  new InvalidInputError('ALEPH_INVALID_COMMAND', field, value, problem, fix);

/** Checks the options and the path; throws the signal's reason when it is already aborted. */
function pathOf(options: PathOptions): string {
  if (typeof options !== 'object' || options === null) {
    throw bad('options', options, 'is not an object', 'pass { path, abortSignal? }');
  }
  if (typeof options.path !== 'string' || options.path === '') {
    throw bad('path', options.path, 'is not a path', 'pass a path in the workspace, e.g. "src/index.ts"');
  }
  options.abortSignal?.throwIfAborted();
  return options.path;
}

const signalOf = (options: PathOptions) =>
  options.abortSignal === undefined ? {} : { signal: options.abortSignal };

/** Runs a file call: not found → `missing`, an abort of the caller's signal → its reason. */
async function call<T, M>(
  options: PathOptions,
  missing: M,
  fn: (path: string) => Promise<T>,
): Promise<T | M> {
  const path = pathOf(options);
  try {
    return await fn(path);
  } catch (error) {
    if (isAlephError(error, 'ALEPH_FILE_NOT_FOUND')) return missing;
    if (options.abortSignal?.aborted && isAlephError(error, 'ALEPH_ABORTED'))
      throw options.abortSignal.reason;
    throw error;
  }
}

function decode(bytes: Uint8Array, encoding: string): string {
  try {
    return new TextDecoder(encoding).decode(bytes);
  } catch {
    if (Buffer.isEncoding(encoding)) return Buffer.from(bytes).toString(encoding);
    throw bad('encoding', encoding, 'is not a text encoding', 'pass e.g. "utf-8", "latin1" or "utf-16le"');
  }
}

function encode(content: string, encoding: string): Uint8Array {
  if (/^utf-?8$/i.test(encoding)) return new TextEncoder().encode(content);
  if (Buffer.isEncoding(encoding)) return new Uint8Array(Buffer.from(content, encoding));
  throw bad(
    'encoding',
    encoding,
    'is not an encoding text can be written in',
    'pass e.g. "utf-8" or "latin1"',
  );
}

function lineNumber(field: string, value: unknown): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || !Number.isFinite(value)) {
    throw bad(field, value, 'is not a line number', 'pass a 1-based line number, or omit it');
  }
  return value;
}

/** The file members of the AI SDK session over `held`'s files. */
export function fileMembers(held: AdapterSession) {
  const files = held.session.files;
  return {
    readFile: (o: PathOptions) => call(o, null, (p) => files.readFileStream(p, signalOf(o))),
    readBinaryFile: (o: PathOptions) => call(o, null, (p) => files.readFile(p, signalOf(o))),
    readTextFile: (o: AiReadTextOptions) =>
      call(o, null, async (p) => {
        const startLine = lineNumber('startLine', o.startLine);
        const endLine = lineNumber('endLine', o.endLine);
        const text = decode(await files.readFile(p, signalOf(o)), o.encoding ?? 'utf-8');
        return extractLines({
          text,
          ...(startLine === undefined ? {} : { startLine }),
          ...(endLine === undefined ? {} : { endLine }),
        });
      }),
    writeFile: (o: PathOptions & { content: ReadableStream<Uint8Array> }) =>
      call(o, undefined, async (p) => {
        if (!(o.content instanceof ReadableStream)) {
          throw bad('content', o.content, 'is not a ReadableStream', 'use writeBinaryFile or writeTextFile');
        }
        await files.writeFile(p, o.content, signalOf(o));
      }),
    writeBinaryFile: (o: PathOptions & { content: Uint8Array }) =>
      call(o, undefined, async (p) => {
        if (!(o.content instanceof Uint8Array)) {
          throw bad('content', o.content, 'is not a Uint8Array', 'pass bytes, or use writeTextFile');
        }
        await files.writeFile(p, o.content, signalOf(o));
      }),
    writeTextFile: (o: AiWriteTextOptions) =>
      call(o, undefined, async (p) => {
        if (typeof o.content !== 'string') {
          throw bad('content', o.content, 'is not a string', 'pass text, or use writeBinaryFile');
        }
        await files.writeFile(p, encode(o.content, o.encoding ?? 'utf-8'), signalOf(o));
      }),
    stat: (o: PathOptions) =>
      call(o, null, async (p): Promise<AiFileStat> => {
        const s = await files.stat(p);
        return { type: s.type === 'file' || s.type === 'directory' ? s.type : 'other', size: s.size };
      }),
    listDirectory: (o: PathOptions) =>
      call(
        o,
        null,
        async (p): Promise<AiDirectoryEntry[]> =>
          (await files.list(p)).map((e) => ({ name: e.name, type: e.type })),
      ),
    deleteFile: async (o: PathOptions) =>
      call(o, false, async (p) => {
        await files.delete(p);
        return true;
      }),
  };
}
